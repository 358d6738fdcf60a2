/**
 * A small cloud with real guest networking for tests: a pcc server on a private test network (netns.ts), and
 * agent hosts each in its own network namespace running pcc-agent with the Linux network back end, registered
 * and given their roles. Hosts tunnel VXLAN to one another over the test network; an "external" network is one
 * more namespace joined to a host's interface (`externalNetwork`). Nothing leaves the machine.
 *
 * `close()` tears every host's data plane down through its back end, stops the agents and removes the
 * namespaces and scratch roots — also when a test failed halfway.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from './harness.js'
import { AGENT_MAIN, killAgent, scratchHost, type ScratchHost } from './agent.js'
import { until } from './compute-api.js'
import { createTestNetwork, type TestNetwork } from './netns.js'
import { RemoteLinuxBackend } from './network-backend-host.js'

export interface DataplaneHost extends ScratchHost {
  namespace: string
  address: string
  agent?: ChildProcess
  /** Starts (again) the host's agent inside its namespace. */
  start(): ChildProcess
  /** SIGKILLs the agent (its data plane stays, as after a crash). */
  kill(): Promise<void>
}

export interface DataplaneClusterOptions {
  hosts: number
  /** Hosts (by index) that get the `network` role and so run routers. */
  networkHosts?: number[]
  /** agent.json `network.physical_interfaces` of each host. */
  physicalInterfaces?: (index: number) => Record<string, string>
  /** agent.json `driver` (default simulated: stand-in guests need no hypervisor). */
  driver?: string
  env?: Record<string, string>
}

export interface Reply {
  status: number
  body: any // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface DataplaneCluster {
  server: TestServer
  net: TestNetwork
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

export async function startDataplaneCluster(options: DataplaneClusterOptions): Promise<DataplaneCluster> {
  const net = createTestNetwork(options.hosts)
  if (net.sharedBecause) throw new Error(net.sharedBecause)
  const hosts: DataplaneHost[] = []
  let server: TestServer | undefined
  const close = async () => {
    for (const h of hosts) if (h.agent) await killAgent(h.agent)
    // The agents are gone; what they built goes through the same back end, so nothing is left on the hosts.
    for (const h of hosts) {
      const backend = new RemoteLinuxBackend(h.namespace, h.root, h.address)
      await backend.teardown().catch(() => {})
      await backend.close()
    }
    await server?.close()
    net.close()
    for (const h of hosts) rmSync(h.root, { recursive: true, force: true })
  }
  try {
    server = await startTestServer({ publicUrlFromListen: true, listenAddress: net.gateway, env: { PCC_HOST_DOWN_AFTER_SECONDS: '30', ...options.env } })
    const adminToken = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    const url = server.url
    const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { 'x-auth-token': adminToken, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    for (let i = 0; i < options.hosts; i++) {
      const token = (await call('POST', '/resmgr/v1/registration-tokens', {})).body.token as string
      const scratch = scratchHost({ hostname: `dp-host-${i}`, controller: url, registrationToken: token })
      // dnsmasq drops to nobody and must reach its files under the root.
      chmodSync(scratch.root, 0o755)
      const configFile = join(scratch.root, 'etc/pcc/agent.json')
      const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>
      writeFileSync(configFile, JSON.stringify({ ...config, driver: options.driver ?? 'simulated', network: { backend: 'linux', physical_interfaces: options.physicalInterfaces?.(i) ?? {} } }))
      const { namespace, address } = net.hosts[i]
      const host: DataplaneHost = {
        ...scratch,
        namespace: namespace!,
        address,
        start() {
          // nsenter switches the network namespace only: the agent sees the host's devices and the machine's files.
          const child = spawn('nsenter', [`--net=/run/netns/${namespace}`, '--', process.execPath, AGENT_MAIN, '--root', scratch.root], { stdio: ['ignore', 'ignore', 'pipe'] })
          child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[agent ${scratch.hostname}] ${d.toString()}`))
          host.agent = child
          return child
        },
        async kill() {
          if (host.agent) await killAgent(host.agent)
          host.agent = undefined
        },
      }
      hosts.push(host)
      host.start()
    }
    for (const h of hosts) {
      await until(`${h.hostname} registered`, 20_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).status === 200 ? true : undefined))
      for (const role of ['hypervisor', ...((options.networkHosts ?? []).includes(hosts.indexOf(h)) ? ['network'] : [])]) {
        await until(`${role} role given to ${h.hostname}`, 20_000, async () => ((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/${role}`, {})).status === 200 ? true : undefined))
        await until(`${role} role of ${h.hostname} applied`, 20_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).body.role_status === 'ok' ? true : undefined))
      }
    }
    const neutron = async (method: string, path: string, body?: unknown) => {
      const r = await call(method, `/network/v2.0${path}`, body)
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
      return r.body
    }
    return { server, net, hosts, adminToken, call, neutron, close }
  } catch (err) {
    await close()
    throw err
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
