/**
 * Guest networking in the all-in-one mode: one pcc-server process with `PCC_LOCAL_HYPERVISOR=qemu` runs the whole
 * cloud on its machine — here a network namespace of its own, with an interface `ext0` to an "external" namespace
 * named by `PCC_LOCAL_PHYSICAL_INTERFACES=public:ext0`. Its own agent holds the hypervisor and network roles: a
 * guest on a tenant network gets its address by DHCP, reads its metadata, reaches the outside through the router's
 * SNAT and is reached through a floating IP, where the outside logs in over SSH with the server's key pair as the
 * default image's os_admin_user; deleting everything leaves nothing of the data plane.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { dataplaneMissing, externalNetwork } from '../../src/testkit/dataplane-cluster.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { RemoteLinuxBackend } from '../../src/testkit/network-backend-host.js'
import { startAllInOne } from '../../src/testkit/all-in-one.js'
import type { ServerProcess } from '../../src/testkit/process.js'
import { qemuProcessesUnder } from '../../src/testkit/qemu-cloud.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'
import { runIn } from '../../src/testkit/stand-in-guest.js'
import { EXTERNAL_GATEWAY, latest, probeScript } from './guest-probe.js'

const PASSWORD = 'all-in-one-network-password'
const missing = realGuestsMissing() ?? dataplaneMissing()

describe('all-in-one: real guest networking on one machine', { skip: missing }, () => {
  let net: TestNetwork
  let ext: { namespace: string; close(): void }
  let dataDir: string
  let server: ServerProcess | undefined
  let api: ComputeClient
  let token: string
  let url: string

  before(async () => {
    net = createTestNetwork(1)
    if (net.sharedBecause) throw new Error(net.sharedBecause)
    ext = externalNetwork(net.hosts[0].namespace!, 'ext0', `${EXTERNAL_GATEWAY}/24`)
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-all-in-one-net-'))
    ;({ server, url, token, api } = await startAllInOne({ host: net.hosts[0], dataDir, password: PASSWORD, env: { PCC_LOCAL_PHYSICAL_INTERFACES: 'public:ext0' } }))
  })
  after(async () => {
    // The agent's data plane goes through its own back end, then the server, its guests and the namespaces.
    const backend = net && new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    await backend?.teardown().catch(() => {})
    await backend?.close()
    await server?.stop('SIGTERM')
    for (const pid of qemuProcessesUnder(join(dataDir, 'host'))) process.kill(pid, 'SIGKILL')
    ext?.close()
    net?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const neutron = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/network/v2.0${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`)
    return text ? JSON.parse(text) : undefined
  }

  it('boots a guest that leases its address, reads its metadata, reaches out through SNAT and is reached through a floating IP; nothing is left after', async () => {
    const hosts = await until('the local host with both roles', 120_000, async () => {
      const r = await fetch(`${url}/resmgr/v1/hosts`, { headers: { 'x-auth-token': token } })
      const list = (await r.json()) as { roles: string[]; role_status: string }[]
      return list.length === 1 && list[0].roles.includes('network') && list[0].role_status === 'ok' ? list : undefined
    }, 500)
    assert.deepEqual(hosts[0].roles.sort(), ['hypervisor', 'network'])
    const tenant = (await neutron('POST', '/networks', { network: { name: 'tenant' } })).network
    const subnet = (await neutron('POST', '/subnets', { subnet: { network_id: tenant.id, ip_version: 4, cidr: '10.62.0.0/24' } })).subnet
    const publicNet = (await neutron('POST', '/networks', { network: { name: 'public', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' } })).network
    await neutron('POST', '/subnets', { subnet: { network_id: publicNet.id, ip_version: 4, cidr: '203.0.113.0/24', gateway_ip: EXTERNAL_GATEWAY, enable_dhcp: false, allocation_pools: [{ start: '203.0.113.10', end: '203.0.113.100' }] } })
    const router = (await neutron('POST', '/routers', { router: { name: 'edge', external_gateway_info: { network_id: publicNet.id } } })).router
    await neutron('PUT', `/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
    const group = (await neutron('POST', '/security-groups', { security_group: { name: 'icmp-in' } })).security_group
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'icmp' } })
    await neutron('POST', '/security-group-rules', { security_group_rule: { security_group_id: group.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22 } })
    const port = (await neutron('POST', '/ports', { port: { network_id: tenant.id, security_groups: [group.id] } })).port

    const image = (await api.other('GET', '/image/v2/images')).body.images.find((i: { name: string }) => i.name === 'pcc-busybox-x86_64')
    assert.equal(image.os_admin_user, 'pcc', 'the image names its login user')
    const keyFile = join(dataDir, 'id')
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'all-in-one', '-f', keyFile])
    assert.ok((await api.call('POST', '/os-keypairs', { keypair: { name: 'login', public_key: readFileSync(`${keyFile}.pub`, 'utf8').trim() } })).status < 300)
    const { id } = await api.create({ name: 'local-net', imageRef: image.id, flavorRef: '1', key_name: 'login', networks: [{ port: port.id }], user_data: Buffer.from(probeScript('10.62.0.1', 'pinger')).toString('base64') })
    const consoleOf = async () => ((await api.action(id, 'os-getConsoleOutput', {})).body.output as string | undefined) ?? ''
    const log = await until('the guest probing', 240_000, async () => {
      const text = await consoleOf()
      return latest(text, 'external-ping')?.value === 'ok' && latest(text, 'peer-ping')?.value === 'ok' ? text : undefined
    }, 1000)
    assert.match(log, new RegExp(`pcc-guest: address eth0 ${port.fixed_ips[0].ip_address.replaceAll('.', '\\.')}/24 gateway 10\\.62\\.0\\.1 mtu 1450`))
    assert.match(log, new RegExp(`pcc-guest: metadata-uuid ${id}`))
    const fip = (await neutron('POST', '/floatingips', { floatingip: { floating_network_id: publicNet.id, port_id: port.id } })).floatingip
    await until('the floating IP reached from outside', 60_000, async () => ((await runIn(ext.namespace, ['busybox', 'ping', '-c', '1', '-W', '1', fip.floating_ip_address])).code === 0 ? true : undefined), 500)
    // SSH from outside through the floating IP, as the image's os_admin_user with the key pair; the guest reads its
    // metadata with curl as Tempest's scenarios do.
    const ssh = ['ssh', '-i', keyFile, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=5', `${image.os_admin_user}@${fip.floating_ip_address}`]
    const session = await runIn(ext.namespace, [...ssh, 'hostname; curl -s http://169.254.169.254/openstack/latest/meta_data.json'], 30_000)
    assert.equal(session.code, 0, session.stderr)
    const [hostname, metadata] = session.stdout.split('\n')
    assert.equal(hostname, 'local-net')
    assert.equal(JSON.parse(metadata).uuid, id)
    assert.deepEqual(Object.keys(JSON.parse(metadata).public_keys), ['login'])

    assert.equal((await api.call('DELETE', `/servers/${id}`)).status, 204)
    await until('the server deleted', 120_000, async () => ((await api.server(id)) === undefined ? true : undefined), 500)
    await neutron('DELETE', `/floatingips/${fip.id}`)
    await neutron('PUT', `/routers/${router.id}/remove_router_interface`, { subnet_id: subnet.id })
    await neutron('DELETE', `/routers/${router.id}`)
    await neutron('DELETE', `/ports/${port.id}`)
    for (const n of [tenant, publicNet]) await neutron('DELETE', `/networks/${n.id}`)
    const backend = new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    try {
      const empty = JSON.stringify({ bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] })
      await until('the machine without guest networking', 30_000, async () => (JSON.stringify(await backend.inventory()) === empty ? true : undefined), 500)
    } finally {
      await backend.close()
    }
  })
})
