/**
 * The real `openstack` client (python3-openstackclient) against the network API. Two ways in:
 * - the normal one: password authentication at the identity service, network endpoint from the catalog
 *   (needs POST /identity/v3/auth/tokens, built by the identity area);
 * - a token with an endpoint override (keystoneauth's admin_token plugin), which exercises the network API
 *   alone, as clients configured with `network_endpoint_override` do.
 * In CI the second way runs only the first test (create, list, show by name, delete, a missing network's message):
 * past authentication and the endpoint, the client sends the same requests either way, and each `openstack`
 * command costs its Python start-up. Every test of both ways runs with PCC_FULL_TESTS=1
 * (`npm run test:full -- network/openstack-cli`).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { admin, giveRole, registerHost, type Json } from './helpers.js'
import { defaultImageName } from '../../src/server/image/default-image.js'

type Env = Record<string, string>

const FULL = process.env.PCC_FULL_TESTS === '1'
/** `whole`: every test; otherwise the first only (above). */
const ways: { name: string; whole: boolean; env: (server: TestServer) => Promise<Env> }[] = [
  { name: 'password auth, endpoint from the catalog', whole: true, env: async (server) => adminEnv(server) },
  {
    name: 'token with a network endpoint override',
    whole: FULL,
    env: async (server) => ({
      OS_AUTH_TYPE: 'admin_token',
      OS_TOKEN: (await admin(server)).token,
      OS_ENDPOINT: `${server.url}/network`,
      OS_NETWORK_ENDPOINT_OVERRIDE: `${server.url}/network`,
    }),
  },
]

for (const way of ways) {
  describe(`openstack CLI against the network API (${way.name})`, () => {
    let server: TestServer
    let env: Env
    const json = <T = Json>(...args: string[]) => openstackJson<T>(args, env)

    before(async () => {
      server = await startTestServer({ publicUrlFromListen: true })
      env = await way.env(server)
    })
    after(() => server.close())

    it('network create/list/show/delete', async () => {
      const net = await json('network', 'create', 'cli-net', '--mtu', '1450', '--tag', 'blue')
      assert.equal(net.name, 'cli-net')
      assert.deepEqual(net.tags, ['blue'])
      assert.equal(net.mtu, 1450)
      const list = await json<Json[]>('network', 'list')
      assert.ok(list.some((n) => n.ID === net.id && n.Name === 'cli-net'))
      const shown = await json('network', 'show', 'cli-net')
      assert.equal(shown.id, net.id)
      const gone = await openstack(['network', 'delete', 'cli-net'], env)
      assert.equal(gone.code, 0, gone.stderr)
      const missing = await openstack(['network', 'show', 'cli-net'], env)
      assert.notEqual(missing.code, 0)
      assert.match(missing.stderr, /No Network found for cli-net/)
    })

    // The rest only where this way runs whole (the header).
    if (!way.whole) return

    it('network create with provider attributes; the admin sees the segment', async () => {
      const flat = await json('network', 'create', '--external', '--provider-network-type', 'flat', '--provider-physical-network', 'datacentre', 'cli-flat')
      assert.deepEqual([flat['provider:network_type'], flat['provider:physical_network'], flat['provider:segmentation_id']], ['flat', 'datacentre', null])
      const vx = await json('network', 'create', '--provider-network-type', 'vxlan', '--provider-segment', '7777', 'cli-vx')
      assert.deepEqual([vx['provider:network_type'], vx['provider:segmentation_id'], vx.mtu], ['vxlan', 7777, 1450])
      const clash = await openstack(['network', 'create', '--provider-network-type', 'vxlan', '--provider-segment', '7777', 'cli-vx2'], env)
      assert.notEqual(clash.code, 0)
      assert.match(clash.stderr, /tunnel ID 7777 is in use/)
      for (const name of ['cli-flat', 'cli-vx']) assert.equal((await openstack(['network', 'delete', name], env)).code, 0)
    })

    it('network agent list/show/set', async () => {
      const adminToken = (await admin(server)).token
      const host = await registerHost(server, adminToken, `cli-agents-${way.name.length}`, '192.0.2.21')
      await giveRole(server, adminToken, host, 'network')
      const l3 = (await json<Json[]>('network', 'agent', 'list', '--agent-type', 'l3', '--host', host.hostname))
      assert.deepEqual(l3.map((a) => [a['Agent Type'], a.Host, a.Alive, a.State, a.Binary]), [['L3 agent', host.hostname, true, true, 'neutron-l3-agent']])
      const table = await openstack(['network', 'agent', 'list', '--host', host.hostname], env)
      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /L3 agent .*:-\) .*UP .*neutron-l3-agent/)
      const set = await openstack(['network', 'agent', 'set', '--disable', '--description', 'draining', l3[0].ID], env)
      assert.equal(set.code, 0, set.stderr)
      const shown = await json('network', 'agent', 'show', l3[0].ID)
      assert.deepEqual([shown.admin_state_up, shown.description, shown.agent_type], [false, 'draining', 'L3 agent'])
    })

    it('subnet, port, security group, router and floating IP commands', async () => {
      const ext = await json('network', 'create', '--external', 'public')
      assert.equal(ext['router:external'], true)
      await json('subnet', 'create', '--network', 'public', '--subnet-range', '203.0.113.0/24', '--no-dhcp', 'public-subnet')
      await json('network', 'create', 'private')
      const subnet = await json('subnet', 'create', '--network', 'private', '--subnet-range', '10.10.0.0/24', '--dns-nameserver', '10.10.0.53', 'private-subnet')
      assert.equal(subnet.cidr, '10.10.0.0/24')
      assert.equal(subnet.gateway_ip, '10.10.0.1')
      const subnets = await json<Json[]>('subnet', 'list')
      assert.deepEqual(subnets.map((s) => s.Subnet).sort(), ['10.10.0.0/24', '203.0.113.0/24'])
      const badCidr = await openstack(['subnet', 'create', '--network', 'private', '--subnet-range', '10.10.300.0/24', 'bad'], env)
      assert.notEqual(badCidr.code, 0)
      assert.match(badCidr.stderr, /not a valid IP subnet/)

      const port = await json('port', 'create', '--network', 'private', '--fixed-ip', 'subnet=private-subnet,ip-address=10.10.0.20', 'cli-port')
      assert.equal(port.name, 'cli-port')
      assert.match(JSON.stringify(port.fixed_ips), /10\.10\.0\.20/)
      const ports = await json<Json[]>('port', 'list')
      assert.ok(ports.some((p) => p.ID === port.id))

      const group = await json('security', 'group', 'create', 'web')
      assert.equal(group.name, 'web')
      const rule = await json('security', 'group', 'rule', 'create', '--protocol', 'tcp', '--dst-port', '443', 'web')
      assert.equal(rule.port_range_min, 443)
      assert.equal(rule.security_group_id, group.id)
      const groups = await json<Json[]>('security', 'group', 'list')
      assert.deepEqual(groups.map((g) => g.Name).sort(), ['default', 'web'])

      const router = await json('router', 'create', 'edge')
      assert.equal(router.name, 'edge')
      const set = await openstack(['router', 'set', '--external-gateway', 'public', 'edge'], env)
      assert.equal(set.code, 0, set.stderr)
      const add = await openstack(['router', 'add', 'subnet', 'edge', 'private-subnet'], env)
      assert.equal(add.code, 0, add.stderr)
      const shown = await json('router', 'show', 'edge')
      assert.equal(shown.external_gateway_info.network_id, ext.id)
      assert.match(JSON.stringify(shown.interfaces_info), /10\.10\.0\.1/)

      const fip = await json('floating', 'ip', 'create', 'public')
      assert.match(fip.floating_ip_address, /^203\.0\.113\./)
      const assoc = await openstack(['floating', 'ip', 'set', '--port', 'cli-port', fip.floating_ip_address], env)
      assert.equal(assoc.code, 0, assoc.stderr)
      const fipShown = await json('floating', 'ip', 'show', fip.id)
      assert.equal(fipShown.port_id, port.id)
      assert.equal(fipShown.fixed_ip_address, '10.10.0.20')
      const fips = await json<Json[]>('floating', 'ip', 'list')
      assert.equal(fips[0]['Fixed IP Address'], '10.10.0.20')

      // A network with ports cannot go; Neutron's message reaches the user.
      const inUse = await openstack(['network', 'delete', 'private'], env)
      assert.notEqual(inUse.code, 0)
      assert.match(inUse.stderr, /ports still in use/)
    })
  })
}

// Servers on networks: the compute API and the network API together, as `openstack` users boot and reach servers.
describe('openstack CLI: a server on a chosen network with a fixed IP and a floating IP', () => {
  let server: TestServer
  let env: Env
  const json = <T = Json>(...args: string[]) => openstackJson<T>(args, env)
  const ok = async (...args: string[]) => {
    const r = await openstack(args, env, 120_000)
    assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' } })
    env = adminEnv(server)
  })
  after(() => server.close())

  it('server create --nic net-id=…,v4-fixed-ip=…, server show, server list --ip, floating ip create, server add floating ip', { timeout: 300_000 }, async () => {
    await json('network', 'create', '--external', 'public')
    await json('subnet', 'create', '--network', 'public', '--subnet-range', '203.0.113.0/24', '--no-dhcp', 'public-subnet')
    const lan = await json('network', 'create', 'lan')
    await json('subnet', 'create', '--network', 'lan', '--subnet-range', '10.20.0.0/24', 'lan-subnet')
    await json('router', 'create', 'edge')
    await ok('router', 'set', '--external-gateway', 'public', 'edge')
    await ok('router', 'add', 'subnet', 'edge', 'lan-subnet')

    const image = (await json<Json[]>('image', 'list')).find((i) => i.Name === defaultImageName())
    assert.ok(image, 'the default image is there')
    // `--wait` prints progress lines before the -f json document.
    const out = await ok('server', 'create', '--image', image.ID, '--flavor', 'm1.tiny', '--nic', `net-id=${lan.id},v4-fixed-ip=10.20.0.15`, '--wait', '-f', 'json', 'web-1')
    const created = JSON.parse(out.slice(out.indexOf('{'))) as Json
    assert.equal(created.status, 'ACTIVE')
    assert.match(JSON.stringify(created.addresses), /lan.*10\.20\.0\.15/)
    await ok('server', 'create', '--image', image.ID, '--flavor', 'm1.tiny', '--network', 'lan', '--wait', 'web-2')

    const shown = await json('server', 'show', 'web-1')
    assert.match(JSON.stringify(shown.addresses), /lan.*10\.20\.0\.15/)
    assert.match(JSON.stringify(shown.security_groups), /default/)
    const byIp = await json<Json[]>('server', 'list', '--ip', '10.20.0.15')
    assert.deepEqual(byIp.map((s) => s.Name), ['web-1'])
    const other = (await json<Json[]>('server', 'list', '--ip', '10.20.0.')).map((s) => s.Name).sort()
    assert.deepEqual(other, ['web-1', 'web-2'])
    assert.deepEqual(await json<Json[]>('server', 'list', '--ip', '10.99.'), [])

    const fip = await json('floating', 'ip', 'create', 'public')
    await ok('server', 'add', 'floating', 'ip', 'web-1', fip.floating_ip_address)
    const withFip = await json('server', 'show', 'web-1')
    assert.match(JSON.stringify(withFip.addresses), new RegExp(`10\\.20\\.0\\.15.*${fip.floating_ip_address.replaceAll('.', '\\.')}`))
    const fipShown = await json('floating', 'ip', 'show', fip.id)
    assert.equal(fipShown.fixed_ip_address, '10.20.0.15')

    // The server's ports go with it: its address returns to the pool and the floating IP is free again.
    await ok('server', 'delete', '--wait', 'web-1')
    assert.equal((await json('floating', 'ip', 'show', fip.id)).port_id, null)
    const again = await ok('server', 'create', '--image', image.ID, '--flavor', 'm1.tiny', '--nic', `net-id=${lan.id},v4-fixed-ip=10.20.0.15`, '--wait', '-f', 'json', 'web-3')
    assert.match(again, /10\.20\.0\.15/)
  })
})
