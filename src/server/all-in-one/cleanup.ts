/**
 * Tearing an all-in-one down (`pcc-server cleanup`): what the local agent made on this machine for a data dir goes,
 * found the way the agent itself finds it, never by a list kept here — the guests by their QEMU pidfiles under
 * `<data-dir>/host` (guest-processes.ts), the data plane by the network back end's own teardown (bridges, taps,
 * VXLAN, `qdhcp-`/`qrouter-` namespaces with their dnsmasq, the nftables tables), then whatever is still mounted
 * under the data dir and the socket directory under /run. Guests outlive pcc-server on purpose (as Nova's outlive
 * nova-compute); this is the way to end them, so that `rm -rf <data-dir>` works afterwards.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { AgentConfig } from '../../host/agent/agent.js'
import { agentRootOf, qemuProcesses, qemuProcessesUnder } from '../../host/compute/qemu/guest-processes.js'
import { run } from '../../host/network/linux/host-commands.js'
import { LinuxNetworkBackend } from '../../host/network/linux/linux-backend.js'

export interface CleanupOptions {
  dataDir: string
  /** Leave the guests' QEMU processes running (everything else goes, their network too). */
  keepGuests: boolean
  say(line: string): void
}

/** Thrown when the data dir is in use: cleaning up under a running agent would fight it. */
export class CleanupRefused extends Error {}

export async function cleanUpAllInOne(o: CleanupOptions): Promise<void> {
  const dataDir = resolve(o.dataDir)
  const root = join(dataDir, 'host')
  const user = processesUsing(join(dataDir, 'pcc.sqlite'))
  if (user.length > 0) throw new CleanupRefused(`a pcc-server (pid ${user.join(', ')}) is using ${dataDir}: stop it first (Ctrl-C or SIGTERM), then run the clean-up again`)
  if (!existsSync(root)) {
    o.say(`nothing to clean up: ${root} does not exist (no local hypervisor ran on this data dir)`)
    return
  }
  if (o.keepGuests) {
    const left = qemuProcessesUnder(root)
    o.say(`guests: ${left.length} kept running (pids ${left.join(', ') || 'none'}); their network goes with the rest`)
  } else {
    o.say(`guests: ${await stopGuests(root)} stopped`)
  }
  const warnings: string[] = []
  const backend = new LinuxNetworkBackend({ root, tunnelIp: null, physicalInterfaces: {}, vxlanPort: 4789, warn: (message) => warnings.push(message) })
  const before = await backend.inventory()
  await backend.teardown()
  o.say(`network: removed ${before.bridges.length} bridges, ${before.taps.length} taps, ${before.namespaces.length} namespaces, ${before.dhcpServers.length} DHCP servers and the nftables tables`)
  const mounts = mountsUnder(dataDir)
  for (const mount of mounts) await run('umount', ['-l', mount])
  if (mounts.length > 0) o.say(`mounts: ${mounts.length} unmounted (${mounts.join(', ')})`)
  const runDir = agentRunDir(root)
  if (runDir) {
    rmSync(runDir, { recursive: true, force: true })
    o.say(`sockets: ${runDir} removed`)
  }
  o.say(`done: nothing of pcc runs on this machine for ${dataDir}; its database, images and disks are still there (rm -rf ${dataDir} removes them)`)
}

/** Ends every guest under `root`: SIGTERM (QEMU exits at once, no guest shutdown), SIGKILL after 10 s. */
async function stopGuests(root: string): Promise<number> {
  const pids = qemuProcessesUnder(root)
  for (const pid of pids) signal(pid, 'SIGTERM')
  const deadline = Date.now() + 10_000
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  for (const pid of pids.filter(alive)) signal(pid, 'SIGKILL')
  while (pids.some(alive)) await new Promise((r) => setTimeout(r, 100))
  return pids.length
}

/**
 * Data dirs (`…/host` roots) other than `root` whose guests run on this machine, with how many: a start on another
 * data dir leaves them running unmanaged, which the operator should hear about once.
 */
export function guestsOfOtherDataDirs(root: string): Map<string, number> {
  const others = new Map<string, number>()
  for (const q of qemuProcesses()) {
    const of = agentRootOf(q.argv)
    if (of && of !== resolve(root)) others.set(of, (others.get(of) ?? 0) + 1)
  }
  return others
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')
}

/** Pids (other than ours) holding `file` open: a running pcc-server keeps its SQLite database open. */
function processesUsing(file: string): number[] {
  const pids: number[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`) === file)) pids.push(Number(pid))
    } catch {
      // gone meanwhile, or not ours to see
    }
  }
  return pids
}

/** Mount points under `dir`, deepest first (so nested ones go before their parents). */
function mountsUnder(dir: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined && p.startsWith(`${dir}/`))
    .map((p) => p.replace(/\\040/g, ' '))
  return [...new Set(points)].sort((a, b) => b.length - a.length)
}

/** The socket directory under /run a long data dir gets (local-hypervisor.ts, runDir), from the agent's config. */
function agentRunDir(root: string): string | undefined {
  try {
    const config = JSON.parse(readFileSync(join(root, 'etc/pcc/agent.json'), 'utf8')) as AgentConfig
    return config.qemu?.run_dir
  } catch {
    return undefined
  }
}
