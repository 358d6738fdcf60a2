/**
 * A test host for the Linux network back end: a network namespace with an interface for the `public` physical
 * network (`ext0`), a scratch root, and the back end running inside (RemoteLinuxBackend). `close()` ends the back
 * end and removes the namespace and the root (call the back end's teardown first).
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestNetwork, type TestNetwork } from '../../../src/testkit/netns.js'
import { RemoteLinuxBackend } from '../../../src/testkit/network-backend-host.js'

export interface LinuxHost {
  net: TestNetwork
  root: string
  backend: RemoteLinuxBackend
  namespace: string
  address: string
  close(): Promise<void>
}

/**
 * One test host: a namespace with an interface for the `public` physical network, and its back end (run with
 * `env`, when given, as its environment).
 */
export function linuxHost(env?: NodeJS.ProcessEnv): LinuxHost {
  const net = createTestNetwork(1)
  if (net.sharedBecause) throw new Error(net.sharedBecause)
  const { namespace, address } = net.hosts[0]
  try {
    // The host's interface for the `public` physical network (the kernel may lack dummy devices: a veth pair).
    execFileSync('ip', ['-n', namespace!, 'link', 'add', 'ext0', 'type', 'veth', 'peer', 'name', 'ext0-peer'])
  } catch (err) {
    net.close()
    throw err
  }
  const root = mkdtempSync(join(tmpdir(), 'pcc-netbackend-'))
  chmodSync(root, 0o755)
  const backend = new RemoteLinuxBackend(namespace!, root, address, { public: 'ext0' }, env)
  return {
    net, root, backend, namespace: namespace!, address,
    async close() {
      await backend.close()
      net.close()
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/**
 * The end of a test with a host: `first` (what the test plugged in: guests, streams), then everything the back end
 * made, the host itself and the test's scratch directory — each step whatever the last did.
 */
export async function closeHost(h: LinuxHost | undefined, first: () => void, scratch?: string): Promise<void> {
  try {
    first()
    await h?.backend.teardown()
  } finally {
    try {
      await h?.close()
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true })
    }
  }
}
