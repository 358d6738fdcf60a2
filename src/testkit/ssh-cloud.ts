/**
 * An all-in-one QEMU pcc reached over SSH as a user would: pcc-server with `PCC_LOCAL_HYPERVISOR=qemu` in a network
 * namespace of its own (all-in-one.ts), an "external" namespace on its `ext0` (the public network, flat), a tenant
 * network routed to it, a security group letting SSH and ICMP in, and a key pair. `boot()` makes a server with a
 * port and a floating IP; `ssh()` logs in through that floating IP from the external namespace. What the Debian
 * image's long test lane and the create→SSH bench share (the all-in-one network test sets up the same by hand).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startAllInOne } from './all-in-one.js'
import { ComputeClient } from './compute-api.js'
import { dataplaneMissing, externalNetwork } from './dataplane-cluster.js'
import { createTestNetwork, type TestNetwork } from './netns.js'
import { RemoteLinuxBackend } from './network-backend-host.js'
import type { ServerProcess } from './process.js'
import { qemuProcessesUnder } from './qemu-cloud.js'
import { realGuestsMissing } from './qemu.js'
import { runIn, type RunResult } from './stand-in-guest.js'

const EXTERNAL_GATEWAY = '203.0.113.1'
const PASSWORD = 'ssh-cloud-password'

export function sshCloudMissing(): string | undefined {
  return realGuestsMissing() ?? dataplaneMissing()
}

export interface SshServer {
  id: string
  portId: string
  fixedIp: string
  floatingIp: string
}

export interface SshCloud {
  url: string
  token: string
  api: ComputeClient
  /** Private key file of the key pair `login`. */
  keyFile: string
  publicKey: string
  /** The external namespace, where SSH and ping come from. */
  outside: string
  /** Neutron call as admin; throws on a status of 300 or more. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  neutron(method: string, path: string, body?: unknown): Promise<any>
  /** A server on the tenant network with the key pair and a floating IP (assigned once its port exists). */
  boot(o: { name: string; imageRef: string; flavorRef: string; userData?: string }): Promise<SshServer>
  /** `ssh user@floatingIp command` from outside, with the key pair (no host key checks, 5 s connect timeout). */
  ssh(server: SshServer, user: string, command: string, timeoutMs?: number): Promise<RunResult>
  /** Polls ssh until `true` succeeds: the ms it took from `since` (performance.now()). */
  untilSsh(server: SshServer, user: string, since: number, timeoutMs: number): Promise<number>
  remove(server: SshServer): Promise<void>
  close(): Promise<void>
}

export async function startSshCloud(): Promise<SshCloud> {
  const net: TestNetwork = createTestNetwork(1)
  if (net.sharedBecause) {
    net.close()
    throw new Error(net.sharedBecause)
  }
  const ext = externalNetwork(net.hosts[0].namespace!, 'ext0', `${EXTERNAL_GATEWAY}/24`)
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-ssh-cloud-'))
  let server: ServerProcess | undefined
  const close = async () => {
    const backend = new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    await backend.teardown().catch(() => {})
    await backend.close()
    await server?.stop('SIGTERM')
    for (const pid of qemuProcessesUnder(join(dataDir, 'host'))) process.kill(pid, 'SIGKILL')
    ext.close()
    net.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    const started = await startAllInOne({ host: net.hosts[0], dataDir, password: PASSWORD, env: { PCC_LOCAL_PHYSICAL_INTERFACES: 'public:ext0' } })
    server = started.server
    const { url, token, api } = started
    const neutron = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}/network/v2.0${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      const text = await res.text()
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`)
      return text ? JSON.parse(text) : undefined
    }
    await untilHostReady(url, token)
    const tenant = (await neutron('POST', '/networks', { network: { name: 'tenant' } })).network
    const subnet = (await neutron('POST', '/subnets', { subnet: { network_id: tenant.id, ip_version: 4, cidr: '10.63.0.0/24', dns_nameservers: [] } })).subnet
    const publicNet = (await neutron('POST', '/networks', { network: { name: 'public', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: publicNet.id, ip_version: 4, cidr: '203.0.113.0/24', gateway_ip: EXTERNAL_GATEWAY, enable_dhcp: false, allocation_pools: [{ start: '203.0.113.10', end: '203.0.113.100' }] } })
    const router = (await neutron('POST', '/routers', { router: { name: 'edge', external_gateway_info: { network_id: publicNet.id } } })).router
    await neutron('PUT', `/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
    const group = (await neutron('POST', '/security-groups', { security_group: { name: 'ssh-in' } })).security_group
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'icmp' } })
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22 } })
    const keyFile = join(dataDir, 'id')
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ssh-cloud', '-f', keyFile])
    const publicKey = readFileSync(`${keyFile}.pub`, 'utf8').trim()
    const made = await api.call('POST', '/os-keypairs', { keypair: { name: 'login', public_key: publicKey } })
    if (made.status >= 300) throw new Error(`keypair: ${made.status}`)
    await api.unlimitedQuotas(await adminProject(url, token))

    const sshArgs = (ip: string, user: string) => ['ssh', '-i', keyFile, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR', `${user}@${ip}`]
    const ssh = (s: SshServer, user: string, command: string, timeoutMs = 60_000) => runIn(ext.namespace, [...sshArgs(s.floatingIp, user), command], timeoutMs)
    return {
      url,
      token,
      api,
      keyFile,
      publicKey,
      outside: ext.namespace,
      neutron,
      async boot(o) {
        const port = (await neutron('POST', '/ports', { port: { network_id: tenant.id, security_groups: [group.id] } })).port
        const { id } = await api.create({ name: o.name, imageRef: o.imageRef, flavorRef: o.flavorRef, key_name: 'login', networks: [{ port: port.id }], ...(o.userData ? { user_data: Buffer.from(o.userData).toString('base64') } : {}) })
        const fip = (await neutron('POST', '/floatingips', { floatingip: { floating_network_id: publicNet.id, port_id: port.id } })).floatingip
        return { id, portId: port.id, fixedIp: port.fixed_ips[0].ip_address, floatingIp: fip.floating_ip_address }
      },
      ssh,
      async untilSsh(s, user, since, timeoutMs) {
        const deadline = since + timeoutMs
        let last: RunResult | undefined
        while (performance.now() < deadline) {
          last = await ssh(s, user, 'true', 15_000)
          if (last.code === 0) return performance.now() - since
          await new Promise((r) => setTimeout(r, 500))
        }
        throw new Error(`no SSH login as ${user}@${s.floatingIp} within ${timeoutMs} ms: ${last?.stderr.trim()}`)
      },
      async remove(s) {
        await api.call('DELETE', `/servers/${s.id}`)
        const deadline = Date.now() + 120_000
        while ((await api.server(s.id)) !== undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500))
        const fips = (await neutron('GET', `/floatingips?port_id=${s.portId}`)).floatingips as { id: string }[]
        for (const f of fips) await neutron('DELETE', `/floatingips/${f.id}`)
        await neutron('DELETE', `/ports/${s.portId}`).catch(() => {})
      },
      close,
    }
  } catch (err) {
    await close()
    throw err
  }
}

async function untilHostReady(url: string, token: string): Promise<void> {
  const deadline = Date.now() + 120_000
  for (;;) {
    const r = await fetch(`${url}/resmgr/v1/hosts`, { headers: { 'x-auth-token': token } })
    const list = (await r.json()) as { roles: string[]; role_status: string }[]
    if (list.length === 1 && list[0].roles.includes('network') && list[0].roles.includes('hypervisor') && list[0].role_status === 'ok') return
    if (Date.now() > deadline) throw new Error(`the local host did not get both roles: ${JSON.stringify(list)}`)
    await new Promise((r) => setTimeout(r, 500))
  }
}

async function adminProject(url: string, token: string): Promise<string> {
  const r = await fetch(`${url}/identity/v3/auth/tokens`, { headers: { 'x-auth-token': token, 'x-subject-token': token } })
  return ((await r.json()) as { token: { project: { id: string } } }).token.project.id
}
