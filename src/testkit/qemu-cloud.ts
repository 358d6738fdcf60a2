/**
 * A small cloud with real guests for tests: a pcc server and agent hosts running the QEMU driver in scratch roots,
 * registered and given the hypervisor role through the public API. With `namespaces`, each agent runs in a network
 * namespace of its own (netns.ts) and the server listens on the test bridge, so two hosts really are two
 * addresses (live migration goes from one to the other over the test network).
 *
 * Guests are daemonized QEMU processes: they outlive their agent. `close()` kills every QEMU started under the
 * hosts' roots, then the agents, the server, the namespaces and the roots — also when a test failed halfway.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AGENT_MAIN, killAgent, scratchHost, type ScratchHost } from './agent.js'
import { ComputeClient, until } from './compute-api.js'
import { startTestServer, type TestServer } from './harness.js'
import { createTestNetwork, type TestNetwork } from './netns.js'
import { killQemusUnder } from './qemu.js'

export interface QemuHost extends ScratchHost {
  namespace?: string
  address: string
  agent?: ChildProcess
  start(): ChildProcess
  kill(): Promise<void>
}

export interface QemuCloud {
  server: TestServer
  hosts: QemuHost[]
  api: ComputeClient
  adminToken: string
  /** An admin call under the server's base URL. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>
}

export interface QemuCloudOptions {
  hosts: number
  /** One network namespace per host (needs root); default false: agents on the machine's own network. */
  namespaces?: boolean
  env?: Record<string, string>
  /** agent.json `qemu` settings added for every host (or per host, by index). */
  qemu?: Record<string, unknown> | ((index: number) => Record<string, unknown>)
  /** The agents' heartbeat interval (default 1 s: tests see changes quickly; 5 s is the agent's own default). */
  heartbeatSeconds?: number
  /** Runs on a host's scratch root before its agent starts (a small file system mounted somewhere, say). */
  prepareRoot?: (root: string, index: number) => void
  /** agent.json `network` settings, by host index (default: backend `none`, guests without ports need no data plane). */
  network?: (index: number) => Record<string, unknown>
  /** agent.json `driver` (default qemu; `simulated` for hosts whose guests need no hypervisor). */
  driver?: 'qemu' | 'simulated'
  /** Roles given to each host beside `hypervisor` (e.g. `network`). */
  roles?: (index: number) => string[]
}

export { qemuProcessesUnder } from './qemu.js'

export async function startQemuCloud(options: QemuCloudOptions): Promise<QemuCloud> {
  const net: TestNetwork | undefined = options.namespaces ? createTestNetwork(options.hosts) : undefined
  if (net?.sharedBecause) throw new Error(net.sharedBecause)
  const hosts: QemuHost[] = []
  let server: TestServer | undefined
  const close = async () => {
    for (const h of hosts) await h.kill()
    for (const h of hosts) await killQemusUnder(h.root)
    await server?.close()
    net?.close()
    for (const h of hosts) rmSync(h.root, { recursive: true, force: true })
  }
  try {
    server = await startTestServer({
      publicUrlFromListen: true,
      ...(net && { listenAddress: net.gateway }),
      env: { PCC_SIMULATED_HOSTS: '0', PCC_HOST_DOWN_AFTER_SECONDS: '30', PCC_RECONCILE_SECONDS: '0', ...options.env },
    })
    const adminToken = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    const url = server.url
    const call = async (method: string, path: string, body?: unknown) => {
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
      const where = net?.hosts[i]
      const address = where?.address ?? '127.0.0.1'
      const scratch = scratchHost({
        hostname: `qemu-host-${i}`, controller: url, registrationToken: token, driver: options.driver ?? 'qemu', fakeNics: false, heartbeatSeconds: options.heartbeatSeconds,
        qemu: { migration_address: address, shutdown_timeout_seconds: 30, ...(typeof options.qemu === 'function' ? options.qemu(i) : options.qemu) },
      })
      options.prepareRoot?.(scratch.root, i)
      const configFile = join(scratch.root, 'etc/pcc/agent.json')
      writeFileSync(configFile, JSON.stringify({ ...JSON.parse(readFileSync(configFile, 'utf8')), network: options.network?.(i) ?? { backend: 'none' } }))
      const host: QemuHost = {
        ...scratch,
        namespace: where?.namespace,
        address,
        start() {
          // nsenter switches the network namespace only: the agent sees the machine's files and its QEMU.
          const command = where?.namespace ? ['nsenter', `--net=/run/netns/${where.namespace}`, '--', process.execPath] : [process.execPath]
          const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PCC_')))
          const child = spawn(command[0], [...command.slice(1), AGENT_MAIN, '--root', scratch.root], { env, stdio: ['ignore', 'ignore', 'pipe'] })
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
    for (const [i, h] of hosts.entries()) {
      await until(`${h.hostname} registered`, 30_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).status === 200 ? true : undefined))
      for (const role of ['hypervisor', ...(options.roles?.(i) ?? [])]) {
        await until(`${role} role given to ${h.hostname}`, 20_000, async () => ((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/${role}`, {})).status === 200 ? true : undefined))
        await until(`${role} role of ${h.hostname} applied`, 30_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).body.role_status === 'ok' ? true : undefined))
      }
    }
    return { server, hosts, api: new ComputeClient(url, adminToken), adminToken, call, close }
  } catch (err) {
    await close()
    throw err
  }
}
