/**
 * A private test network: one Linux network namespace per host, each joined by a veth pair to a bridge that
 * holds the control plane's address, so agent traffic really crosses an interface. The bridge has no uplink
 * and no route leads to it from outside, so a server listening on its address is reachable only from this
 * machine's namespaces.
 *
 * Needs root (CAP_NET_ADMIN) and the `ip` command. Where the machine does not allow it, `createTestNetwork`
 * answers a shared network (every host on the machine's own stack, the control plane on 127.0.0.1) and says why,
 * so the test still runs everything else.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface TestHostNetwork {
  /** The namespace's name, or undefined on the shared network. */
  namespace?: string
  /** The host's address as the control plane sees it. */
  address: string
  /** Prefix of a command line that runs a program inside the namespace (empty on the shared network). */
  exec: string[]
}

export interface TestNetwork {
  /** Where the control plane listens: the bridge's address, or 127.0.0.1 on the shared network. */
  gateway: string
  hosts: TestHostNetwork[]
  /** Why the hosts share the machine's network, when they do. */
  sharedBecause?: string
  /** Removes the namespaces, veth pairs and bridge (processes still inside must be stopped first). */
  close(): void
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** Where test networks of every process on this machine claim their /24 (one directory each, made atomically). */
const CLAIMS = '/run/pcc-test-subnets'

/** The third octets of the 10.201.X.0/24 networks the machine routes now (test networks of this run or left over). */
function routedSubnets(): Set<number> {
  const routes = execFileSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' })
  return new Set([...routes.matchAll(/^10\.201\.(\d+)\.0\/24 /gm)].map((m) => Number(m[1])))
}

/** The process that holds a claim; undefined while another process is making it (no pid written yet). */
function claimOwner(dir: string): number | undefined {
  try {
    return Number(readFileSync(join(dir, 'pid'), 'utf8').trim()) || undefined
  } catch {
    return undefined
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * A /24 in 10.201.0.0/16 that no other test network has, claimed until `release`. Two networks on one subnet
 * break both: the machine routes the subnet to one bridge only, so the other's servers answer ECONNREFUSED (seen
 * once in CI, where test files and the Tempest lanes make networks at the same time). A claim of a process that
 * died is taken over (renamed away first, so two processes cannot both take it). `octets`: the third octets to
 * choose from (tests).
 */
export function claimSubnet(octets: number[] = Array.from({ length: 250 }, (_, i) => i + 1)): { subnet: string; release(): void } {
  mkdirSync(CLAIMS, { recursive: true })
  const routed = routedSubnets()
  const first = randomBytes(1)[0] % octets.length
  for (let i = 0; i < octets.length; i++) {
    const octet = octets[(first + i) % octets.length]
    if (routed.has(octet)) continue
    const dir = join(CLAIMS, String(octet))
    try {
      mkdirSync(dir)
    } catch {
      const owner = claimOwner(dir)
      if (owner === undefined || alive(owner)) continue
      try {
        renameSync(dir, `${dir}.stale-${process.pid}`)
        rmSync(`${dir}.stale-${process.pid}`, { recursive: true, force: true })
        mkdirSync(dir)
      } catch {
        continue
      }
    }
    writeFileSync(join(dir, 'pid'), String(process.pid))
    return { subnet: `10.201.${octet}`, release: () => rmSync(dir, { recursive: true, force: true }) }
  }
  throw new Error('no free 10.201.X.0/24 for a test network: remove leftover pccbr* bridges and /run/pcc-test-subnets')
}

export function createTestNetwork(count: number): TestNetwork {
  const tag = randomBytes(3).toString('hex')
  const bridge = `pccbr${tag}`
  const created: (() => void)[] = []
  const close = () => {
    for (const undo of created.reverse()) {
      try {
        undo()
      } catch {
        // already gone
      }
    }
  }
  try {
    const claim = claimSubnet()
    created.push(claim.release)
    const subnet = claim.subnet
    ip('link', 'add', bridge, 'type', 'bridge')
    created.push(() => ip('link', 'del', bridge))
    ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge)
    ip('link', 'set', bridge, 'up')
    const hosts: TestHostNetwork[] = []
    for (let i = 0; i < count; i++) {
      const namespace = `pcc-${tag}-${i}`
      const outside = `pcc${tag}h${i}`
      const inside = `pcc${tag}n${i}`
      const address = `${subnet}.${10 + i}`
      ip('netns', 'add', namespace)
      created.push(() => ip('netns', 'del', namespace))
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside)
      created.push(() => ip('link', 'del', outside))
      ip('link', 'set', inside, 'netns', namespace)
      ip('link', 'set', outside, 'master', bridge)
      ip('link', 'set', outside, 'up')
      ip('netns', 'exec', namespace, 'ip', 'addr', 'add', `${address}/24`, 'dev', inside)
      ip('netns', 'exec', namespace, 'ip', 'link', 'set', inside, 'up')
      ip('netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up')
      hosts.push({ namespace, address, exec: ['ip', 'netns', 'exec', namespace] })
    }
    return { gateway: `${subnet}.1`, hosts, close }
  } catch (err) {
    close()
    const why = ((err as { stderr?: Buffer }).stderr?.toString() || (err as Error).message).trim()
    return {
      gateway: '127.0.0.1',
      hosts: Array.from({ length: count }, () => ({ address: '127.0.0.1', exec: [] })),
      sharedBecause: `network namespaces are not available here (${why})`,
      close: () => {},
    }
  }
}
