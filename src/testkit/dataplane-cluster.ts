/**
 * A small cloud with real guest networking for tests: the shared test cloud (qemu-cloud.ts) with every agent host in
 * its own network namespace running the Linux network back end, the hosts named as network nodes given that role.
 * Hosts tunnel VXLAN to one another over the test network; an "external" network is one more namespace joined
 * to a host's interface (`externalNetwork`). Nothing leaves the machine.
 *
 * `close()` stops the agents, tears every host's data plane down through its back end, then closes the cloud
 * (QEMU processes, server, namespaces, scratch roots) — also when a test failed halfway.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync } from 'node:fs'
import type { TestServer } from './harness.js'
import { RemoteLinuxBackend } from './network-backend-host.js'
import { startQemuCloud, type QemuHost } from './qemu-cloud.js'

export type DataplaneHost = QemuHost & { namespace: string }

export interface DataplaneClusterOptions {
  hosts: number
  /** Hosts (by index) that get the `network` role and so run routers. */
  networkHosts?: number[]
  /** agent.json `network.physical_interfaces` of each host. */
  physicalInterfaces?: (index: number) => Record<string, string>
  /** agent.json `driver` (default simulated: stand-in guests need no hypervisor). */
  driver?: 'qemu' | 'simulated'
  /** agent.json `qemu` settings of every host. */
  qemu?: Record<string, unknown>
  env?: Record<string, string>
}

export interface Reply {
  status: number
  body: any // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface DataplaneCluster {
  server: TestServer
  hosts: DataplaneHost[]
  adminToken: string
  /** An admin call to the server (path under the base URL). */
  call(method: string, path: string, body?: unknown): Promise<Reply>
  /** An admin call to the network API (path under /network/v2.0); its body, or an error naming the status. */
  neutron(method: string, path: string, body?: unknown): Promise<any> // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>
}

/** Why the machine cannot run these tests, or undefined when it can. */
export function dataplaneMissing(): string | undefined {
  for (const tool of ['ip', 'nft', 'dnsmasq', 'busybox', 'nsenter', 'unshare']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' })
    } catch {
      return `${tool} is not installed`
    }
  }
  if (process.getuid?.() !== 0) return 'not root (network namespaces need CAP_NET_ADMIN)'
  return undefined
}

/** The shared test cloud (qemu-cloud.ts), one namespace per host, every agent with the Linux network back end. */
export async function startDataplaneCluster(options: DataplaneClusterOptions): Promise<DataplaneCluster> {
  const cloud = await startQemuCloud({
    hosts: options.hosts,
    namespaces: true,
    driver: options.driver ?? 'simulated',
    qemu: options.qemu,
    env: options.env,
    network: (i) => ({ backend: 'linux', physical_interfaces: options.physicalInterfaces?.(i) ?? {} }),
    roles: (i) => ((options.networkHosts ?? []).includes(i) ? ['network'] : []),
  })
  const hosts = cloud.hosts as DataplaneHost[]
  // dnsmasq drops to nobody and must reach its files under the root.
  for (const h of hosts) chmodSync(h.root, 0o755)
  const neutron = async (method: string, path: string, body?: unknown) => {
    const r = await cloud.call(method, `/network/v2.0${path}`, body)
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body
  }
  return {
    server: cloud.server,
    hosts,
    adminToken: cloud.adminToken,
    call: cloud.call,
    neutron,
    async close() {
      for (const h of hosts) await h.kill()
      // The agents are gone; what they built goes through the same back end, so nothing is left on the hosts.
      for (const h of hosts) {
        const backend = new RemoteLinuxBackend(h.namespace, h.root, h.address)
        await backend.teardown().catch(() => {})
        await backend.close()
      }
      await cloud.close()
    },
  }
}

/** A namespace playing the outside world, joined to a host's interface `device` (mapped to a physical network). */
export function externalNetwork(hostNamespace: string, device: string, address: string): { namespace: string; close(): void } {
  const namespace = `pccx-${Math.random().toString(16).slice(2, 10)}`
  execFileSync('ip', ['netns', 'add', namespace])
  try {
    execFileSync('ip', ['-n', hostNamespace, 'link', 'add', device, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace])
    execFileSync('ip', ['-n', hostNamespace, 'link', 'set', device, 'up'])
    execFileSync('ip', ['-n', namespace, 'addr', 'add', address, 'dev', 'eth0'])
    execFileSync('ip', ['-n', namespace, 'link', 'set', 'eth0', 'up'])
    execFileSync('ip', ['-n', namespace, 'link', 'set', 'lo', 'up'])
  } catch (err) {
    execFileSync('ip', ['netns', 'del', namespace])
    throw err
  }
  return {
    namespace,
    close: () => {
      try {
        execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' })
      } catch {
        // already gone
      }
    },
  }
}
