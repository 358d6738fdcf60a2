/** Stages a scratch host root (os-release, /proc files, bonds, time sync) for onboarding and agent tests. */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { processRunning } from '../cli/host/host.js'

export interface HostRootOptions {
  hostname?: string
  os?: { id: string; versionId: string; codename?: string }
  memoryMb?: number
  cpuFlags?: string
  /** bond name → "Bonding Mode" line value, e.g. { bond0: 'fault-tolerance (active-backup)' } */
  bonds?: Record<string, string>
  timeSync?: boolean
}

export function stageHostRoot(options: HostRootOptions = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'pcc-host-'))
  const write = (path: string, content: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), content)
  }
  const os = options.os ?? { id: 'ubuntu', versionId: '22.04', codename: 'jammy' }
  write('/etc/hostname', `${options.hostname ?? 'node-1'}\n`)
  write('/etc/os-release', `ID=${os.id}\nVERSION_ID="${os.versionId}"\nVERSION_CODENAME=${os.codename ?? ''}\nPRETTY_NAME="${os.id} ${os.versionId}"\n`)
  write('/proc/meminfo', `MemTotal:       ${(options.memoryMb ?? 16384) * 1024} kB\nMemFree:        1024 kB\n`)
  write('/proc/cpuinfo', `processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 ${options.cpuFlags ?? 'vmx'}\n`)
  for (const [bond, mode] of Object.entries(options.bonds ?? {})) write(`/proc/net/bonding/${bond}`, `Ethernet Channel Bonding Driver\n\nBonding Mode: ${mode}\n`)
  if (options.timeSync ?? true) write('/run/systemd/timesync/synchronized', '')
  return root
}

/** The pid the agent of a staged root wrote, and the host id it was registered under. */
export const agentPid = (root: string): number => Number(readFileSync(join(root, 'run/pcc-agent.pid'), 'utf8').trim())
export const hostIdOf = (root: string): string => readFileSync(join(root, 'etc/pcc/host_id'), 'utf8').trim()

/** Whether a process still runs (the check pcctl's scratch-root service manager uses). */
export const alive = processRunning
