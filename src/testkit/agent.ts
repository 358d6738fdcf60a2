/** Test helpers for host agents: a scratch host root with the files the agent reads, and the agent as a process. */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ExportManager } from '../host/storage/exports/export-manager.js'
import type { TestServer } from './harness.js'
import type { TestNetwork } from './netns.js'

export const AGENT_MAIN = join(process.cwd(), 'dist/src/host/agent/main.js')

export interface ScratchHost {
  root: string
  hostId: string
  hostname: string
}

export interface ScratchHostOptions {
  hostname: string
  controller: string
  registrationToken: string
  heartbeatSeconds?: number
  delayMs?: number
  vcpus?: number
  memoryMb?: number
  /** The agent's driver (default simulated); `qemu` runs real guests under this scratch root. */
  driver?: 'simulated' | 'qemu'
  /** agent.json's `qemu` settings (qemu driver). */
  qemu?: Record<string, unknown>
  /** The host protocol the agent announces (agent.json `protocol_version`): an agent that was not upgraded. */
  protocolVersion?: number
  /** Write made-up NICs and a bond under sys/class/net (default true); false: the machine's (or namespace's) own NICs and addresses. */
  fakeNics?: boolean
}

/** A host root with /etc/hostname, os-release, /proc (cpuinfo, meminfo, a bond) and /sys/class/net, and agent.json. */
export function scratchHost(o: ScratchHostOptions): ScratchHost {
  const root = mkdtempSync(join(tmpdir(), `pcc-host-${o.hostname}-`))
  const hostId = randomUUID()
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  write('etc/hostname', `${o.hostname}\n`)
  write('etc/os-release', 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
  write('proc/cpuinfo', [0, 1, 2, 3].map((i) => `processor\t: ${i}\nmodel name\t: Test CPU @ 2.0GHz\nflags\t\t: fpu vme vmx sse\n`).join('\n'))
  write('proc/meminfo', 'MemTotal:       16384000 kB\nMemFree:         8000000 kB\n')
  write('proc/net/bonding/bond0', 'Ethernet Channel Bonding Driver: v5.10\n\nBonding Mode: IEEE 802.3ad Dynamic link aggregation\n\nSlave Interface: eth0\nMII Status: up\n\nSlave Interface: eth1\nMII Status: up\n')
  if (o.fakeNics ?? true) {
    write('sys/class/net/eth0/address', '52:54:00:00:00:01\n')
    write('sys/class/net/eth1/address', '52:54:00:00:00:02\n')
    write('sys/class/net/bond0/address', '52:54:00:00:00:01\n')
  }
  write(
    'etc/pcc/agent.json',
    JSON.stringify({
      controller: o.controller,
      host_id: hostId,
      registration_token: o.registrationToken,
      driver: o.driver ?? 'simulated',
      heartbeat_seconds: o.heartbeatSeconds ?? 1,
      simulated: { delay_ms: o.delayMs ?? 5, vcpus: o.vcpus ?? 8, memory_mb: o.memoryMb ?? 16000, disk_gb: 200 },
      ...(o.qemu && { qemu: o.qemu }),
      ...(o.protocolVersion !== undefined && { protocol_version: o.protocolVersion }),
    }),
  )
  return { root, hostId, hostname: o.hostname }
}

export function agentConfig(root: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(root, 'etc/pcc/agent.json'), 'utf8')) as Record<string, unknown>
}

/** The agent as a process; `exec` runs it inside a test host's network namespace (testkit/netns.ts). */
export function spawnAgent(root: string, exec: string[] = []): ChildProcess {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PCC_')))
  const command = [...exec, process.execPath, AGENT_MAIN, '--root', root]
  const child = spawn(command[0], command.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] })
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[agent ${root}] ${d.toString()}`))
  return child
}

export async function killAgent(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill(signal)
  await exited
}

/**
 * Onboards a simulated agent host end to end: a registration token from `api` (an admin), a scratch root whose
 * agent dials `controller`, the agent process, and the hypervisor role applied. The caller kills the agent and
 * removes the root. (Hosts with the QEMU driver: testkit/qemu-cloud.ts.)
 */
export async function onboardAgent(
  api: { other(method: string, path: string, body?: unknown): Promise<{ status: number; body: { token?: string; role_status?: string } }> },
  hostname: string,
  controller: string,
  options: Partial<ScratchHostOptions> = {},
): Promise<{ host: ScratchHost; agent: ChildProcess }> {
  const token = await api.other('POST', '/resmgr/v1/registration-tokens', { note: hostname })
  if (token.status !== 201 || !token.body.token) throw new Error(`registration token: ${token.status} ${JSON.stringify(token.body)}`)
  const host = scratchHost({ hostname, controller, registrationToken: token.body.token, ...options })
  const agent = spawnAgent(host.root)
  const deadline = Date.now() + 30_000
  const wait = async (what: string, ok: () => Promise<boolean>) => {
    while (!(await ok())) {
      if (Date.now() > deadline || agent.exitCode !== null) throw new Error(`agent ${hostname}: ${what} did not happen`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  try {
    await wait('registration', async () => (await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200)
    const role = await api.other('PUT', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`, {})
    if (role.status !== 200) throw new Error(`hypervisor role: ${role.status} ${JSON.stringify(role.body)}`)
    await wait('the hypervisor role', async () => (await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.role_status === 'ok')
  } catch (err) {
    // The caller never got the agent or the root: leave neither behind.
    const log = (() => {
      try {
        return readFileSync(join(host.root, 'var/log/pcc/agent.log'), 'utf8').trim().split('\n').slice(-3).join('\n')
      } catch {
        return ''
      }
    })()
    await killAgent(agent)
    rmSync(host.root, { recursive: true, force: true })
    throw new Error(`${(err as Error).message}${log ? `; its log ends:\n${log}` : ''}`)
  }
  return { host, agent }
}

/**
 * Tears down a control plane with a storage host's agent beside it (any part may be missing: a set-up that failed
 * half-way): the agent, both places' export daemons (detached by design, they outlive their parents), the server,
 * the host's root and the network namespaces.
 */
export async function closeStorageTestbed(parts: { agent?: ChildProcess; host?: ScratchHost; server?: TestServer; net?: TestNetwork }): Promise<void> {
  const { agent, host, server, net } = parts
  if (agent) await killAgent(agent)
  if (host) await new ExportManager(join(host.root, 'run/pcc/volumes')).stopAll()
  if (server) await new ExportManager(join(server.dataDir, 'run/volumes')).stopAll()
  await server?.close()
  if (host) rmSync(host.root, { recursive: true, force: true })
  net?.close()
}
