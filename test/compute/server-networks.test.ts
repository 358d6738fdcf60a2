/**
 * Servers and the network service: ports allocated with the server (auto, none, a network, a fixed IP, a port)
 * and every refusal leaving nothing behind; addresses in show, detail and /ips; os-interface; security groups on
 * create and through the actions; and, through the conductor, ports bound to the host, floating IPs shown as
 * `floating`, and everything released with the server. Both dialects.
 */
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import { call, computeTestbed, createBody, setState, type ComputeTestbed, type Persona } from './helpers.js'
import { client, projectMember, type Client } from '../network/helpers.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ACTIVE = { vm_state: 'active', task_state: null, power_state: 1, launched_at: Date.now(), host: 'h1' }

async function counts(tb: ComputeTestbed): Promise<{ servers: number; ports: number; networks: number }> {
  const db = tb.server.deps.store.db
  const n = async (table: 'servers' | 'ports' | 'networks') => Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
  return { servers: await n('servers'), ports: await n('ports'), networks: await n('networks') }
}

async function serverPorts(tb: ComputeTestbed, serverId: string) {
  return tb.server.deps.store.db.selectFrom('ports').selectAll().where('device_id', '=', serverId).orderBy('created_at').execute()
}

async function waitStatus(tb: ComputeTestbed, id: string, status: string, timeoutMs = 60_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs
  let last: Json = {}
  while (Date.now() < deadline) {
    const r = await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')
    if (r.status === 404 && status === 'GONE') return {}
    last = r.body?.server ?? {}
    if (last.status === status && last['OS-EXT-STS:task_state'] === null) return last
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.fail(`${id} did not reach ${status}: ${JSON.stringify(last)}`)
}

for (const dialect of DIALECTS) {
  describe(`servers on networks, API only (${dialect})`, () => {
    let tb: ComputeTestbed
    let net: Client
    let root: Client
    let lan: Json
    let lanSubnet: Json

    /** Creates a server as `who` and returns the response. */
    const create = (body: unknown, version = '2.96', who?: Persona) => call(tb, who ?? tb.member, 'POST', '/servers', body, version)
    const show = async (id: string, version = '2.96') => (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, version)).body.server

    before(async () => {
      tb = await computeTestbed(dialect)
      net = client(tb.server, tb.member)
      root = client(tb.server, tb.admin)
      lan = await net.create('networks', 'network', { name: 'lan' })
      lanSubnet = await net.create('subnets', 'subnet', { network_id: lan.id, ip_version: 4, cidr: '192.168.10.0/24' })
    })
    after(() => tb.close())

    it('"none" gives no port; a network, a fixed IP and a port are honoured; addresses show once the server is built', async () => {
      const none = await create(createBody('none', {}, 'none'))
      assert.equal(none.status, 202, JSON.stringify(none.body))
      assert.deepEqual(await serverPorts(tb, none.body.server.id), [])

      const userPort = await net.create('ports', 'port', { network_id: lan.id, name: 'mine' })
      const r = await create(createBody('nets', {}, [{ uuid: lan.id }, { uuid: lan.id, fixed_ip: '192.168.10.50' }, { port: userPort.id }]))
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const id = r.body.server.id
      assert.deepEqual(r.body.server.security_groups, [{ name: 'default' }], 'the create answer echoes the requested groups')
      const ports = await serverPorts(tb, id)
      assert.equal(ports.length, 3)
      assert.deepEqual(ports.map((p) => p.device_owner), ['compute:nova', 'compute:nova', 'compute:nova'])
      const ips = (await net.get<Json>(`/v2.0/ports?device_id=${id}`)).body.ports.map((p: Json) => p.fixed_ips[0].ip_address).sort()
      assert.ok(ips.includes('192.168.10.50'), ips.join())

      // Nova hides addresses while the server is building.
      assert.deepEqual((await show(id)).addresses, {})
      assert.deepEqual((await call(tb, tb.member, 'GET', `/servers/${id}/ips`)).body.addresses.lan.length, 3, '/ips reads the ports')
      await setState(tb, id, ACTIVE)
      const server = await show(id)
      assert.deepEqual(Object.keys(server.addresses), ['lan'])
      assert.equal(server.addresses.lan.length, 3)
      for (const a of server.addresses.lan) {
        assert.deepEqual(Object.keys(a).sort(), ['OS-EXT-IPS-MAC:mac_addr', 'OS-EXT-IPS:type', 'addr', 'version'])
        assert.equal(a.version, 4)
        assert.equal(a['OS-EXT-IPS:type'], 'fixed')
        assert.match(a['OS-EXT-IPS-MAC:mac_addr'], /^fa:16:3e(:[0-9a-f]{2}){3}$/)
      }
      assert.deepEqual(server.addresses.lan.map((a: Json) => a.addr).sort(), ips)
      assert.deepEqual(server.security_groups, [{ name: 'default' }])
      assert.equal(server.accessIPv4, '', 'access IPs stay what the user set')
      const detail = (await call(tb, tb.member, 'GET', '/servers/detail', undefined, '2.96')).body.servers.find((s: Json) => s.id === id)
      assert.deepEqual(detail.addresses, server.addresses)

      // /ips and /ips/{network}: version and addr only.
      const all = (await call(tb, tb.member, 'GET', `/servers/${id}/ips`)).body
      assert.deepEqual(all, { addresses: { lan: server.addresses.lan.map((a: Json) => ({ version: 4, addr: a.addr })) } })
      const one = await call(tb, tb.member, 'GET', `/servers/${id}/ips/lan`)
      assert.deepEqual(one.body, { lan: all.addresses.lan })
      const missing = await call(tb, tb.member, 'GET', `/servers/${id}/ips/elsewhere`)
      assert.equal(missing.status, 404)
      assert.equal(missing.body.itemNotFound.message, 'Instance is not a member of specified network')
      assert.equal((await call(tb, tb.other, 'GET', `/servers/${id}/ips`)).status, 404, "another project's server is invisible")

      // PUT below 2.75 answers the reduced view: address items carry only version and addr.
      const put = await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { name: 'nets2' } }, '2.74')
      assert.deepEqual(put.body.server.addresses, all.addresses)
      const put75 = await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { name: 'nets3' } }, '2.75')
      assert.deepEqual(put75.body.server.addresses, server.addresses)

      // The user's port is bound to the server; another server cannot take it.
      const bound = (await net.get<Json>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.equal(bound.device_id, id)
      assert.equal(bound.status, 'ACTIVE')
      const before = await counts(tb)
      const taken = await create(createBody('taken', {}, [{ port: userPort.id }]))
      assert.equal(taken.status, 409, JSON.stringify(taken.body))
      assert.deepEqual(await counts(tb), before)
    })

    it('"auto" and no networks below 2.37 use the project\'s network, created on first use', async () => {
      const carol = tb.other
      const c = client(tb.server, carol)
      assert.equal((await c.get<Json>('/v2.0/networks')).body.networks.length, 0)
      const auto = await create(createBody('auto', {}, 'auto'), '2.37', carol)
      assert.equal(auto.status, 202, JSON.stringify(auto.body))
      const nets = (await c.get<Json>('/v2.0/networks')).body.networks
      assert.deepEqual(nets.map((n: Json) => n.name), ['auto_allocated_network'])
      const old = await create({ server: { name: 'old', imageRef: createBody('x').server.imageRef, flavorRef: '1', min_count: 1, max_count: 1 } }, '2.1', carol)
      assert.equal(old.status, 202, JSON.stringify(old.body))
      const empty = await create({ server: { name: 'old2', imageRef: createBody('x').server.imageRef, flavorRef: '1', networks: [] } }, '2.1', carol)
      assert.equal(empty.status, 202)
      for (const id of [auto.body.server.id, old.body.server.id, empty.body.server.id]) {
        const ports = await serverPorts(tb, id)
        assert.equal(ports.length, 1)
        assert.equal(ports[0].network_id, nets[0].id)
        await setState(tb, id, ACTIVE)
        const addr = (await call(tb, carol, 'GET', `/servers/${id}`)).body.server.addresses.auto_allocated_network[0]
        assert.match(addr.addr, /^10\.0\.0\.\d+$/)
      }
      assert.equal((await c.get<Json>('/v2.0/networks')).body.networks.length, 1, 'reused, not created again')

      // Once a project has its auto-allocated network, "auto" keeps using it, whatever else it creates.
      await c.create('networks', 'network', { name: 'second' })
      const still = await create(createBody('still', {}, 'auto'), '2.37', carol)
      assert.equal((await serverPorts(tb, still.body.server.id))[0].network_id, nets[0].id)
      // Without one, two networks to choose from make "auto" ambiguous (409), and nothing is created.
      const erin = await projectMember(tb.server, 'erin')
      const e = client(tb.server, erin)
      await e.create('networks', 'network', { name: 'one' })
      await e.create('networks', 'network', { name: 'two' })
      const before = await counts(tb)
      const ambiguous = await create(createBody('amb', {}, 'auto'), '2.37', erin)
      assert.equal(ambiguous.status, 409)
      assert.match(ambiguous.body.conflictingRequest.message, /Multiple possible networks found/)
      assert.deepEqual(await counts(tb), before)
    })

    it('a multiple create gets ports for each server', async () => {
      const r = await create(createBody('multi', { min_count: 3, max_count: 3 }, [{ uuid: lan.id }]))
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const rows = await tb.server.deps.store.db.selectFrom('servers').select('id').where('name', 'like', 'multi-%').execute()
      assert.equal(rows.length, 3)
      const addrs = new Set<string>()
      for (const row of rows) {
        const ports = await serverPorts(tb, row.id)
        assert.equal(ports.length, 1)
        for (const ip of (await net.get<Json>(`/v2.0/ports/${ports[0].id}`)).body.port.fixed_ips) addrs.add(ip.ip_address)
      }
      assert.equal(addrs.size, 3, 'distinct addresses')
    })

    it('refusals answer in Nova\'s terms and create neither a server nor a port', async () => {
      const otherNet = await client(tb.server, tb.other).create('networks', 'network', { name: 'theirs' })
      const userPort = await net.create('ports', 'port', { network_id: lan.id })
      const ext = await root.create('networks', 'network', { name: 'public', 'router:external': true })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '203.0.113.0/24' })
      const tiny = await net.create('networks', 'network', { name: 'tiny' })
      await net.create('subnets', 'subnet', { network_id: tiny.id, ip_version: 4, cidr: '10.9.0.0/24', allocation_pools: [{ start: '10.9.0.5', end: '10.9.0.5' }] })
      await net.create('ports', 'port', { network_id: tiny.id })
      const single = await net.create('networks', 'network', { name: 'single' })
      await net.create('subnets', 'subnet', { network_id: single.id, ip_version: 4, cidr: '10.8.0.0/24', allocation_pools: [{ start: '10.8.0.5', end: '10.8.0.5' }] })
      const taken = await create(createBody('holder', {}, [{ uuid: lan.id, fixed_ip: '192.168.10.77' }]))
      assert.equal(taken.status, 202)

      const cases: [string, unknown, number, string, RegExp][] = [
        ['unknown network', createBody('x', {}, [{ uuid: '00000000-0000-4000-8000-000000000000' }]), 400, 'badRequest', /Network 00000000-0000-4000-8000-000000000000 could not be found/],
        ["another project's network", createBody('x', {}, [{ uuid: otherNet.id }]), 400, 'badRequest', /could not be found/],
        ['unknown port', createBody('x', {}, [{ port: '00000000-0000-4000-8000-000000000001' }]), 400, 'badRequest', /Port .* could not be found/],
        ['fixed IP in use', createBody('x', {}, [{ uuid: lan.id, fixed_ip: '192.168.10.77' }]), 400, 'badRequest', /Fixed IP address is already in use/],
        ['fixed IP outside the network', createBody('x', {}, [{ uuid: lan.id, fixed_ip: '10.1.1.1' }]), 400, 'badRequest', /10\.1\.1\.1/],
        ['exhausted subnet', createBody('x', {}, [{ uuid: tiny.id }]), 409, 'conflictingRequest', /No more IP addresses available/],
        ['external network', createBody('x', {}, [{ uuid: ext.id }]), 403, 'forbidden', /external network/],
        ['unknown security group', createBody('x', { security_groups: [{ name: 'nope' }] }, [{ uuid: lan.id }]), 400, 'badRequest', /nope/],
        ['unknown security group without ports', createBody('x', { security_groups: [{ name: 'nope' }] }, 'none'), 400, 'badRequest', /nope/],
        ['port twice', createBody('x', {}, [{ port: userPort.id }, { port: userPort.id }]), 400, 'badRequest', /requested twice/],
        ['port and fixed IP together', createBody('x', {}, [{ port: userPort.id, fixed_ip: '192.168.10.9' }]), 400, 'badRequest', /cannot be specified together/],
        ['fixed IP for several servers', createBody('x', { max_count: 2 }, [{ uuid: lan.id, fixed_ip: '192.168.10.9' }]), 400, 'badRequest', /max_count cannot be greater than 1/],
        ['port for several servers', createBody('x', { max_count: 2 }, [{ port: userPort.id }]), 400, 'badRequest', /multiple instances with a single configured port/],
        ['the second server of a multiple create finds no address', createBody('x', { min_count: 2, max_count: 2 }, [{ uuid: single.id }]), 409, 'conflictingRequest', /No more IP addresses/],
      ]
      for (const [what, body, status, fault, message] of cases) {
        const before = await counts(tb)
        const r = await create(body)
        assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`)
        assert.ok(r.body[fault], `${what}: ${JSON.stringify(r.body)}`)
        assert.match(r.body[fault].message, message, what)
        assert.deepEqual(await counts(tb), before, `${what}: nothing created`)
      }
      // Below 2.37 the uuid is checked by hand (Nova's "Bad networks format").
      const bad = await create({ server: { name: 'x', imageRef: createBody('x').server.imageRef, flavorRef: '1', networks: [{ uuid: 'abc' }] } }, '2.1')
      assert.equal(bad.status, 400)
      assert.match(bad.body.badRequest.message, /network uuid is not in proper format/)

      // The port quota is 403, and the rollback also undoes the network "auto" created on the way.
      const dave = await projectMember(tb.server, 'dave')
      await root.put(`/v2.0/quotas/${dave.projectId}`, { quota: { port: 0 } })
      const before = await counts(tb)
      const quota = await create(createBody('q', {}, 'auto'), '2.37', dave)
      assert.equal(quota.status, 403, JSON.stringify(quota.body))
      assert.match(quota.body.forbidden.message, /Maximum number of ports exceeded/)
      assert.deepEqual(await counts(tb), before, 'no server, no port, no auto-allocated network')
    })

    it('os-interface: list, show, attach by network (with a fixed IP) or port, detach; Nova\'s codes and states', async () => {
      const r = await create(createBody('nic', {}, [{ uuid: lan.id }]))
      const id = r.body.server.id
      const path = `/servers/${id}/os-interface`
      const initial = (await call(tb, tb.member, 'GET', path)).body.interfaceAttachments
      assert.equal(initial.length, 1)
      assert.deepEqual(Object.keys(initial[0]).sort(), ['fixed_ips', 'mac_addr', 'net_id', 'port_id', 'port_state'])
      assert.equal(initial[0].net_id, lan.id)
      assert.equal(initial[0].port_state, 'ACTIVE')
      assert.equal(initial[0].fixed_ips[0].subnet_id, lanSubnet.id)
      assert.equal((await call(tb, tb.member, 'GET', path, undefined, '2.70')).body.interfaceAttachments[0].tag, null)

      // Not while building, nor while a task runs, nor locked (for the owner).
      assert.equal((await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id } })).status, 409)
      await setState(tb, id, { ...ACTIVE, task_state: 'rebooting' })
      assert.equal((await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id } })).status, 409)
      await setState(tb, id, { ...ACTIVE, locked: 1, locked_by: 'owner' })
      const locked = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id } })
      assert.equal(locked.status, 409)
      assert.match(locked.body.conflictingRequest.message, /is locked/)
      await setState(tb, id, { ...ACTIVE, locked: 0, locked_by: null })

      const before = await counts(tb)
      const refusals: [unknown, number, string][] = [
        [{ interfaceAttachment: { net_id: lan.id, port_id: initial[0].port_id } }, 400, 'both'],
        [{ interfaceAttachment: { fixed_ips: [{ ip_address: '192.168.10.30' }] } }, 400, 'fixed IP without network'],
        [{ interfaceAttachment: { net_id: '00000000-0000-4000-8000-000000000000' } }, 404, 'unknown network'],
        [{ interfaceAttachment: { port_id: '00000000-0000-4000-8000-000000000000' } }, 404, 'unknown port'],
        [{ interfaceAttachment: { net_id: lan.id, fixed_ips: [{ ip_address: initial[0].fixed_ips[0].ip_address }] } }, 409, 'fixed IP in use'],
        [{ interfaceAttachment: { port_id: initial[0].port_id } }, 409, 'port already bound'],
        [{ interfaceAttachment: { net_id: 'not-a-uuid' } }, 400, 'malformed'],
        [{ interfaceAttachment: { net_id: lan.id, tag: 'eth1' } }, 400, 'tag below 2.49'],
      ]
      for (const [body, status, what] of refusals) {
        const res = await call(tb, tb.member, 'POST', path, body)
        assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`)
      }
      assert.equal((await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id, tag: 'eth1' } }, '2.49')).status, 400, 'no device tags here')
      assert.deepEqual(await counts(tb), before, 'refusals change nothing')

      await setState(tb, id, { ...ACTIVE, vm_state: 'stopped', power_state: 4 })
      const attached = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id, fixed_ips: [{ ip_address: '192.168.10.30' }] } })
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      const a = attached.body.interfaceAttachment
      assert.equal(a.net_id, lan.id)
      assert.deepEqual(a.fixed_ips, [{ subnet_id: lanSubnet.id, ip_address: '192.168.10.30' }])
      const userPort = await net.create('ports', 'port', { network_id: lan.id })
      const byPort = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { port_id: userPort.id } })
      assert.equal(byPort.status, 200)
      assert.equal(byPort.body.interfaceAttachment.port_id, userPort.id)
      const listed = (await call(tb, tb.member, 'GET', path)).body.interfaceAttachments.map((i: Json) => i.port_id)
      assert.deepEqual(listed, [initial[0].port_id, a.port_id, userPort.id])
      const shown = await call(tb, tb.member, 'GET', `${path}/${a.port_id}`)
      assert.deepEqual(shown.body.interfaceAttachment, a)
      assert.equal((await call(tb, tb.member, 'GET', `${path}/${lanSubnet.id}`)).status, 404)
      assert.equal((await call(tb, tb.reader, 'POST', path, { interfaceAttachment: { net_id: lan.id } })).status, 403, 'readers may not attach')
      assert.equal((await call(tb, tb.reader, 'GET', path)).status, 200, 'readers may list')
      const addrs = (await show(id)).addresses.lan.map((x: Json) => x.addr)
      assert.ok(addrs.includes('192.168.10.30'))

      // Detach: 202; the port made for the server goes, the user's port is only unbound.
      const detached = await call(tb, tb.member, 'DELETE', `${path}/${a.port_id}`)
      assert.equal(detached.status, 202)
      assert.equal(detached.headers.get('content-length'), '0')
      assert.equal((await net.get(`/v2.0/ports/${a.port_id}`)).status, 404)
      assert.equal((await call(tb, tb.member, 'DELETE', `${path}/${a.port_id}`)).status, 404)
      assert.equal((await call(tb, tb.member, 'DELETE', `${path}/${userPort.id}`)).status, 202)
      const kept = (await net.get<Json>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.equal(kept.device_id, '')
      assert.equal(kept.device_owner, '')
      // The fixed address is back in the pool.
      const again = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id, fixed_ips: [{ ip_address: '192.168.10.30' }] } })
      assert.equal(again.status, 200)

      const actions = (await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions`)).body.instanceActions.map((x: Json) => x.action)
      assert.deepEqual(actions.filter((x: string) => x.endsWith('_interface')).sort(), ['attach_interface', 'attach_interface', 'attach_interface', 'detach_interface', 'detach_interface'])
    })

    it('security groups: applied on create, shown from the ports, added and removed through the network service', async () => {
      const web = await net.create('security-groups', 'security_group', { name: 'web' })
      await net.create('security-group-rules', 'security_group_rule', { security_group_id: web.id, direction: 'ingress', protocol: 'tcp', port_range_min: 80, port_range_max: 80 })
      const r = await create(createBody('sg', { security_groups: [{ name: 'web' }, { name: web.id }] }, [{ uuid: lan.id }]))
      assert.equal(r.status, 202, JSON.stringify(r.body))
      assert.deepEqual(r.body.server.security_groups, [{ name: 'web' }, { name: web.id }], 'the create answer echoes the request')
      const id = r.body.server.id
      const [port] = await serverPorts(tb, id)
      assert.deepEqual((await net.get<Json>(`/v2.0/ports/${port.id}`)).body.port.security_groups, [web.id])
      await setState(tb, id, ACTIVE)
      assert.deepEqual((await show(id)).security_groups, [{ name: 'web' }])

      const act = (body: unknown) => call(tb, tb.member, 'POST', `/servers/${id}/action`, body)
      assert.equal((await act({ addSecurityGroup: { name: 'default' } })).status, 202)
      assert.deepEqual((await show(id)).security_groups, [{ name: 'default' }, { name: 'web' }])
      const detail = (await call(tb, tb.member, 'GET', '/servers/detail')).body.servers.find((s: Json) => s.id === id)
      assert.deepEqual(detail.security_groups, [{ name: 'default' }, { name: 'web' }])
      const again = await act({ addSecurityGroup: { name: 'web' } })
      assert.equal(again.status, 400)
      assert.match(again.body.badRequest.message, /already associated/)
      const unknown = await act({ addSecurityGroup: { name: 'nope' } })
      assert.equal(unknown.status, 404, JSON.stringify(unknown.body))
      assert.equal((await act({ removeSecurityGroup: { name: 'nope' } })).status, 404)
      assert.equal((await act({ removeSecurityGroup: { name: 'web' } })).status, 202)
      const notThere = await act({ removeSecurityGroup: { name: 'web' } })
      assert.equal(notThere.status, 400)
      assert.match(notThere.body.badRequest.message, /not associated/)
      assert.deepEqual((await show(id)).security_groups, [{ name: 'default' }])
      assert.deepEqual((await net.get<Json>(`/v2.0/ports/${port.id}`)).body.port.security_groups.length, 1)

      await act({ addSecurityGroup: { name: 'web' } })
      const listed = await call(tb, tb.member, 'GET', `/servers/${id}/os-security-groups`)
      assert.equal(listed.status, 200)
      const groups = listed.body.security_groups
      assert.deepEqual(groups.map((g: Json) => g.name), ['default', 'web'])
      const w = groups.find((g: Json) => g.name === 'web')
      assert.equal(w.id, web.id)
      assert.equal(w.tenant_id, tb.member.projectId)
      assert.deepEqual(w.rules.map((x: Json) => ({ ip_protocol: x.ip_protocol, from_port: x.from_port, to_port: x.to_port, ip_range: x.ip_range, group: x.group, parent_group_id: x.parent_group_id })), [
        { ip_protocol: 'tcp', from_port: 80, to_port: 80, ip_range: { cidr: '0.0.0.0/0' }, group: {}, parent_group_id: web.id },
      ])
      const def = groups.find((g: Json) => g.name === 'default')
      assert.ok(def.rules.length >= 1 && def.rules.every((x: Json) => x.group.name === 'default'), 'default group rules name their remote group')
      assert.equal((await call(tb, tb.other, 'GET', `/servers/${id}/os-security-groups`)).status, 404)
    })
  })

  describe(`servers on networks through the conductor (${dialect})`, () => {
    let tb: ComputeTestbed
    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
    })
    after(() => tb.close())

    it('binds ports to the host, shows floating IPs, and releases everything with the server (idempotently)', async () => {
      const net = client(tb.server, tb.member)
      const root = client(tb.server, tb.admin)
      const ext = await root.create('networks', 'network', { name: 'public', 'router:external': true })
      const extSubnet = await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '203.0.113.0/24' })
      const lan = await net.create('networks', 'network', { name: 'lan' })
      const subnet = await net.create('subnets', 'subnet', { network_id: lan.id, ip_version: 4, cidr: '192.168.20.0/24' })
      const router = await net.create('routers', 'router', { name: 'r', external_gateway_info: { network_id: ext.id } })
      assert.equal((await net.put(`/v2.0/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })).status, 200)
      const userPort = await net.create('ports', 'port', { network_id: lan.id, name: 'mine' })

      const r = await call(tb, tb.member, 'POST', '/servers', createBody('fip', {}, [{ uuid: lan.id, fixed_ip: '192.168.20.40' }, { port: userPort.id }]), '2.96')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const id = r.body.server.id
      await waitStatus(tb, id, 'ACTIVE')
      const host = (await call(tb, tb.admin, 'GET', `/servers/${id}`, undefined, '2.96')).body.server['OS-EXT-SRV-ATTR:host']
      const ports = (await root.get<Json>(`/v2.0/ports?device_id=${id}`)).body.ports
      assert.equal(ports.length, 2)
      for (const p of ports) assert.equal(p['binding:host_id'], host, 'bound to the scheduled host')
      const auto = ports.find((p: Json) => p.id !== userPort.id)

      // A floating IP through Neutron shows after its fixed address, on the same network, as "floating".
      const fip = await net.create('floatingips', 'floatingip', { floating_network_id: ext.id })
      assert.equal((await net.put(`/v2.0/floatingips/${fip.id}`, { floatingip: { port_id: auto.id } })).status, 200)
      const shown = (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
      const items = shown.addresses.lan.map((a: Json) => [a.addr, a['OS-EXT-IPS:type']])
      const at = items.findIndex(([addr]: string[]) => addr === '192.168.20.40')
      assert.deepEqual(items[at + 1], [fip.floating_ip_address, 'floating'])
      assert.equal(shown.addresses.lan[at + 1]['OS-EXT-IPS-MAC:mac_addr'], auto.mac_address)
      assert.match(fip.floating_ip_address, /^203\.0\.113\./)
      assert.ok(extSubnet.id)
      const ips = (await call(tb, tb.member, 'GET', `/servers/${id}/ips/lan`)).body.lan
      assert.ok(ips.some((a: Json) => a.addr === fip.floating_ip_address))
      // The ip filter matches fixed addresses only.
      const byFixed = (await call(tb, tb.member, 'GET', '/servers?ip=192.168.20.40', undefined, '2.96')).body.servers
      assert.deepEqual(byFixed.map((s: Json) => s.id), [id])
      const byFloating = (await call(tb, tb.member, 'GET', `/servers?ip=${fip.floating_ip_address}`, undefined, '2.96')).body.servers
      assert.deepEqual(byFloating, [])

      // The binding follows the server: none while shelved offloaded, the new host after unshelve.
      const binding = async () => (await root.get<Json>(`/v2.0/ports/${auto.id}`)).body.port['binding:host_id']
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { shelve: null })).status, 202)
      await waitStatus(tb, id, 'SHELVED_OFFLOADED')
      assert.equal(await binding(), '')
      assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.addresses.lan.length, 3, 'addresses stay with the shelved server')
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { unshelve: null })).status, 202)
      await waitStatus(tb, id, 'ACTIVE')
      assert.equal(await binding(), host)

      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}`)).status, 204)
      await waitStatus(tb, id, 'GONE')
      assert.equal((await net.get(`/v2.0/ports/${auto.id}`)).status, 404, 'the port made for the server is deleted')
      const kept = (await root.get<Json>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.deepEqual([kept.device_id, kept.device_owner, kept['binding:host_id']], ['', '', ''], "the user's port is unbound")
      const freed = (await net.get<Json>(`/v2.0/floatingips/${fip.id}`)).body.floatingip
      assert.equal(freed.port_id, null, 'the floating IP of the deleted port is disassociated')
      assert.equal(freed.fixed_ip_address, null)
      // The address is back in the pool: a new server can have it.
      const reuse = await call(tb, tb.member, 'POST', '/servers', createBody('reuse', {}, [{ uuid: lan.id, fixed_ip: '192.168.20.40' }]), '2.96')
      assert.equal(reuse.status, 202, JSON.stringify(reuse.body))
      // A delete run again after a crash finds nothing left to release.
      await tb.server.deps.conductor.markDeleted(id)
      assert.equal((await net.get(`/v2.0/ports/${userPort.id}`)).status, 200)
    })

    it('os-interface reaches the host: the guest gets the NIC and lets it go; a NIC the host cannot plug is 409, the attach undone', async () => {
      const net = client(tb.server, tb.member)
      const root = client(tb.server, tb.admin)
      const lan = await net.create('networks', 'network', { name: 'lan-hotplug' })
      await net.create('subnets', 'subnet', { network_id: lan.id, ip_version: 4, cidr: '192.168.40.0/24' })
      const r = await call(tb, tb.member, 'POST', '/servers', createBody('hotplug', {}, [{ uuid: lan.id }]), '2.96')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const id = r.body.server.id
      await waitStatus(tb, id, 'ACTIVE')
      const driver = tb.server.deps.conductor.simulatedHosts[0].driver
      const path = `/servers/${id}/os-interface`
      const nicPorts = () => driver.nics(id).map((n) => n.portId)
      const netLines = async () => (await driver.consoleOutput(id)).split('\n').filter((l) => /virtio_net/.test(l))
      assert.deepEqual(nicPorts(), [], 'a simulated host gets no NICs in the spec it spawns')

      // Attach: the port is bound to the host and the guest has its NIC, with the port's MAC and network.
      const attached = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { net_id: lan.id } })
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      const a = attached.body.interfaceAttachment
      assert.deepEqual(driver.nics(id), [{ portId: a.port_id, macAddress: a.mac_addr, networkId: lan.id, mtu: lan.mtu }])
      assert.deepEqual(await netLines(), [`[ pcc ] virtio_net: nic ${a.mac_addr} added`])
      assert.equal((await root.get<Json>(`/v2.0/ports/${a.port_id}`)).body.port['binding:host_id'], tb.server.deps.conductor.simulatedHosts[0].hostname)

      // Detach: the guest lets it go first, then the port goes.
      assert.equal((await call(tb, tb.member, 'DELETE', `${path}/${a.port_id}`)).status, 202)
      assert.deepEqual(nicPorts(), [])
      assert.deepEqual(await netLines(), [`[ pcc ] virtio_net: nic ${a.mac_addr} added`, `[ pcc ] virtio_net: nic ${a.mac_addr} removed`])
      assert.equal((await net.get(`/v2.0/ports/${a.port_id}`)).status, 404)

      // A host that cannot plug the NIC: 409, and the attach is undone (no port made for it, the user's unbound).
      const userPort = await net.create('ports', 'port', { network_id: lan.id, name: 'unplugged' })
      const portsBefore = (await serverPorts(tb, id)).map((p) => p.id)
      const portCount = (await counts(tb)).ports
      driver.injectFailures(0, { attachNic: 'no free PCI slot' })
      try {
        for (const body of [{ net_id: lan.id }, { port_id: userPort.id }]) {
          const refused = await call(tb, tb.member, 'POST', path, { interfaceAttachment: body })
          assert.equal(refused.status, 409, JSON.stringify(refused.body))
          assert.match(refused.body.conflictingRequest.message, new RegExp(`^Failed to attach network adapter device to ${id}: no free PCI slot`))
        }
      } finally {
        driver.injectFailures(0, {})
      }
      assert.deepEqual((await serverPorts(tb, id)).map((p) => p.id), portsBefore, 'no port left on the server')
      const actions = (await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions`)).body.instanceActions.filter((x: Json) => x.action === 'attach_interface')
      assert.deepEqual(actions.map((x: Json) => x.message).sort(), ['Error', 'Error', null], 'the refused attaches are recorded as failed')
      assert.equal((await counts(tb)).ports, portCount, 'the port made for the attach is deleted')
      const unbound = (await root.get<Json>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.deepEqual([unbound.device_id, unbound.device_owner, unbound['binding:host_id']], ['', '', ''], "the user's port is unbound")
      assert.deepEqual(nicPorts(), [])

      // A guest that cannot let a NIC go (paused: the simulated and QEMU drivers both refuse): 409, the port stays.
      const plugged = await call(tb, tb.member, 'POST', path, { interfaceAttachment: { port_id: userPort.id } })
      assert.equal(plugged.status, 200, JSON.stringify(plugged.body))
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { pause: null })).status, 202)
      await waitStatus(tb, id, 'PAUSED')
      const held = await call(tb, tb.member, 'DELETE', `${path}/${userPort.id}`)
      assert.equal(held.status, 409, JSON.stringify(held.body))
      assert.match(held.body.conflictingRequest.message, /^Failed to detach network adapter device from .*: .*paused/)
      assert.deepEqual(nicPorts(), [userPort.id])
      assert.equal((await net.get<Json>(`/v2.0/ports/${userPort.id}`)).body.port.device_id, id, 'the port stays attached')
      const failedDetach = (await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions/${held.headers.get('x-openstack-request-id') ?? held.headers.get('x-compute-request-id')}`, undefined, '2.51')).body.instanceAction
      assert.deepEqual([failedDetach.action, failedDetach.message, failedDetach.events[0].event, failedDetach.events[0].result], ['detach_interface', 'Error', 'compute_detach_interface', 'Error'])
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { unpause: null })).status, 202)
      await waitStatus(tb, id, 'ACTIVE')
      assert.equal((await call(tb, tb.member, 'DELETE', `${path}/${userPort.id}`)).status, 202)
      assert.deepEqual(nicPorts(), [])

      // A stopped server: the ports only (its next start builds its NICs from them); the host is not asked.
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { 'os-stop': null })).status, 202)
      await waitStatus(tb, id, 'SHUTOFF')
      driver.injectFailures(0, { attachNic: 'must not be asked' })
      try {
        assert.equal((await call(tb, tb.member, 'POST', path, { interfaceAttachment: { port_id: userPort.id } })).status, 200)
      } finally {
        driver.injectFailures(0, {})
      }
      assert.deepEqual(nicPorts(), [])
    })

    it("a build that fails for good gives its network back, as Nova deallocates: its own port deleted, the user's unbound", async () => {
      const net = client(tb.server, tb.member)
      const lan = await net.create('networks', 'network', { name: 'lan-fail' })
      await net.create('subnets', 'subnet', { network_id: lan.id, ip_version: 4, cidr: '192.168.30.0/24' })
      const userPort = await net.create('ports', 'port', { network_id: lan.id, name: 'kept' })
      const driver = tb.server.deps.conductor.simulatedHosts[0].driver
      driver.injectFailures(0, { spawn: 'disk full' })
      let failed: Json
      try {
        const r = await call(tb, tb.member, 'POST', '/servers', createBody('doomed', {}, [{ uuid: lan.id, fixed_ip: '192.168.30.50' }, { port: userPort.id }]), '2.96')
        assert.equal(r.status, 202, JSON.stringify(r.body))
        failed = await waitStatus(tb, r.body.server.id, 'ERROR')
      } finally {
        driver.injectFailures(0, {})
      }
      assert.match(failed.fault.message, /disk full/)
      assert.deepEqual(failed.addresses, {})
      assert.deepEqual((await net.get<Json>(`/v2.0/ports?device_id=${failed.id}`)).body.ports, [])
      const kept = (await client(tb.server, tb.admin).get<Json>(`/v2.0/ports/${userPort.id}`)).body.port
      assert.deepEqual([kept.device_id, kept.device_owner, kept['binding:host_id']], ['', '', ''], "the user's port is unbound")
      const again = await call(tb, tb.member, 'POST', '/servers', createBody('retry', {}, [{ uuid: lan.id, fixed_ip: '192.168.30.50' }, { port: userPort.id }]), '2.96')
      assert.equal(again.status, 202, `the address and the port are free again: ${JSON.stringify(again.body)}`)
      await waitStatus(tb, again.body.server.id, 'ACTIVE')
    })
  })
}
