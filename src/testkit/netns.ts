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

export function createTestNetwork(count: number): TestNetwork {
  const tag = randomBytes(3).toString('hex')
  // A /24 picked at random in 10.201.0.0/16, so leftovers of a crashed run do not collide with this one.
  const subnet = `10.201.${1 + (randomBytes(1)[0] % 250)}`
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
