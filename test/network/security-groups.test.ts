import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, projectMember, tableCounts, type Client, type Json } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: security groups and rules (${dialect})`, () => {
    let server: TestServer
    let alice: Client
    let bob: Client
    let root: Client

    before(async () => {
      server = await startTestServer({ dialect })
      alice = client(server, await projectMember(server, 'alice'))
      bob = client(server, await projectMember(server, 'bob'))
      root = client(server, await admin(server))
    })
    after(() => server.close())

    it("gives each project a default group with Neutron's default rules on first use", async () => {
      const list = await alice.get<{ security_groups: Json[] }>('/v2.0/security-groups')
      assert.equal(list.status, 200)
      const defaults = list.body.security_groups.filter((g) => g.name === 'default')
      assert.equal(defaults.length, 1)
      const group = defaults[0]
      const rules = group.security_group_rules.map((r: Json) => `${r.direction}/${r.ethertype}/${r.remote_group_id === group.id ? 'self' : r.remote_group_id}/${r.protocol}`).sort()
      assert.deepEqual(rules, ['egress/IPv4/null/null', 'egress/IPv6/null/null', 'ingress/IPv4/self/null', 'ingress/IPv6/self/null'])
      const again = await alice.get<{ security_groups: Json[] }>('/v2.0/security-groups')
      assert.equal(again.body.security_groups.filter((g) => g.name === 'default').length, 1, 'created once')
      assertNeutronError(await alice.post('/v2.0/security-groups', { security_group: { name: 'default' } }), 409, 'SecurityGroupDefaultAlreadyExists')
      assertNeutronError(await alice.del(`/v2.0/security-groups/${group.id}`), 409, 'SecurityGroupCannotRemoveDefault')
    })

    it('creates groups with egress rules only, and rules by protocol, ports, prefix and remote group', async () => {
      const web = await alice.create('security-groups', 'security_group', { name: 'web', description: 'web servers' })
      assert.equal(web.security_group_rules.length, 2)
      assert.ok(web.security_group_rules.every((r: Json) => r.direction === 'egress'))
      const ssh = await alice.create('security-group-rules', 'security_group_rule', {
        security_group_id: web.id, direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: 22, port_range_max: 22, remote_ip_prefix: '10.0.0.0/8',
      })
      assert.equal(ssh.protocol, 'tcp')
      assert.equal(ssh.port_range_min, 22)
      assert.equal(ssh.remote_ip_prefix, '10.0.0.0/8')
      const fromSelf = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: web.id, direction: 'ingress', ethertype: 'IPv6', protocol: 'udp', port_range_min: 1000, port_range_max: 2000, remote_group_id: web.id })
      assert.equal(fromSelf.remote_group_id, web.id)
      const icmp = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: web.id, direction: 'ingress', protocol: 'icmp', port_range_min: 8, port_range_max: 0 })
      assert.equal(icmp.ethertype, 'IPv4')
      const host = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: web.id, direction: 'ingress', protocol: '47', remote_ip_prefix: '192.0.2.7' })
      assert.equal(host.remote_ip_prefix, '192.0.2.7/32')
      const shown = await alice.get<{ security_group: Json }>(`/v2.0/security-groups/${web.id}`)
      assert.equal(shown.body.security_group.security_group_rules.length, 6)
      const filtered = await alice.get<{ security_group_rules: Json[] }>(`/v2.0/security-group-rules?security_group_id=${web.id}&direction=ingress`)
      assert.equal(filtered.body.security_group_rules.length, 4)
      assert.equal((await alice.del(`/v2.0/security-group-rules/${host.id}`)).status, 204)
      assertNeutronError(await alice.get(`/v2.0/security-group-rules/${host.id}`), 404, 'SecurityGroupRuleNotFound')
    })

    it("keeps a rule's remote prefix as sent, host bits too, and compares the network it names", async () => {
      const g = await alice.create('security-groups', 'security_group', { name: 'prefixes' })
      const rule = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: g.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22, remote_ip_prefix: '10.2.3.124/24' })
      assert.equal(rule.remote_ip_prefix, '10.2.3.124/24')
      assert.equal(rule.normalized_cidr, '10.2.3.0/24')
      const shown = (await alice.get<{ security_group_rule: Json }>(`/v2.0/security-group-rules/${rule.id}`)).body.security_group_rule
      assert.deepEqual([shown.remote_ip_prefix, shown.normalized_cidr], ['10.2.3.124/24', '10.2.3.0/24'])
      const v6 = await alice.create('security-group-rules', 'security_group_rule', { security_group_id: g.id, direction: 'ingress', ethertype: 'IPv6', remote_ip_prefix: '2001:DB8:0:0::5/64' })
      assert.deepEqual([v6.remote_ip_prefix, v6.normalized_cidr], ['2001:db8::5/64', '2001:db8::/64'], 'the address in canonical form')
      const same = await alice.post('/v2.0/security-group-rules', { security_group_rule: { security_group_id: g.id, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22, remote_ip_prefix: '10.2.3.7/24' } })
      assertNeutronError(same, 409, 'SecurityGroupRuleExists')
    })

    it('validates rules as Neutron does and creates nothing on bad input', async () => {
      const g = await alice.create('security-groups', 'security_group', { name: 'strict' })
      const before = await tableCounts(server)
      const rule = (attrs: Record<string, unknown>) => alice.post('/v2.0/security-group-rules', { security_group_rule: { security_group_id: g.id, direction: 'ingress', ...attrs } })
      assertNeutronError(await rule({ protocol: 'tcp', port_range_min: 80, port_range_max: 22 }), 400, 'SecurityGroupInvalidPortRange')
      assertNeutronError(await rule({ protocol: 'tcp', port_range_min: 0, port_range_max: 22 }), 400, 'SecurityGroupInvalidPortValue')
      assertNeutronError(await rule({ port_range_min: 80, port_range_max: 80 }), 400, 'SecurityGroupProtocolRequiredWithPorts')
      assertNeutronError(await rule({ protocol: 'gre', port_range_min: 80, port_range_max: 80 }), 400, 'SecurityGroupInvalidProtocolForPortRange')
      assertNeutronError(await rule({ protocol: 'icmp', port_range_max: 3 }), 400, 'SecurityGroupMissingIcmpType')
      assertNeutronError(await rule({ protocol: 'icmp', port_range_min: 300 }), 400, 'SecurityGroupInvalidIcmpValue')
      assertNeutronError(await rule({ protocol: 'bogus' }), 400, 'SecurityGroupRuleInvalidProtocol')
      assertNeutronError(await rule({ protocol: '256' }), 400, 'SecurityGroupRuleInvalidProtocol')
      assertNeutronError(await rule({ ethertype: 'IPv4', remote_ip_prefix: '::/0' }), 400, 'SecurityGroupRuleParameterConflict')
      assertNeutronError(await rule({ remote_ip_prefix: '10.0.0.0/8', remote_group_id: g.id }), 400, 'SecurityGroupRemoteGroupAndRemoteIpPrefix')
      assertNeutronError(await rule({ remote_ip_prefix: '10.0.0/8' }), 400, 'InvalidInput')
      assertNeutronError(await rule({ remote_group_id: '00000000-0000-4000-8000-000000000000' }), 404, 'SecurityGroupNotFound')
      assertNeutronError(await rule({ direction: 'sideways' }), 400, 'BadRequest')
      assertNeutronError(await rule({ ethertype: 'IPv5' }), 400, 'BadRequest')
      assertNeutronError(await rule({ port_range_min: 'ssh', protocol: 'tcp', port_range_max: 22 }), 400, 'BadRequest')
      assertNeutronError(await alice.post('/v2.0/security-group-rules', { security_group_rule: { security_group_id: '00000000-0000-4000-8000-000000000000', direction: 'ingress' } }), 404, 'SecurityGroupNotFound')
      // Egress any/IPv4 exists already in every new group.
      const dup = await alice.post<Json>('/v2.0/security-group-rules', { security_group_rule: { security_group_id: g.id, direction: 'egress', ethertype: 'IPv4', remote_ip_prefix: '0.0.0.0/0' } })
      assertNeutronError(dup, 409, 'SecurityGroupRuleExists')
      assert.deepEqual(await tableCounts(server), before)
    })

    it("keeps projects' groups apart and refuses to delete a group in use", async () => {
      const g = await alice.create('security-groups', 'security_group', { name: 'private' })
      assertNeutronError(await bob.get(`/v2.0/security-groups/${g.id}`), 404, 'SecurityGroupNotFound')
      assertNeutronError(await bob.post('/v2.0/security-group-rules', { security_group_rule: { security_group_id: g.id, direction: 'ingress' } }), 404, 'SecurityGroupNotFound')
      assert.ok(!(await bob.get<{ security_groups: Json[] }>('/v2.0/security-groups')).body.security_groups.some((x) => x.id === g.id))
      assert.ok((await root.get<{ security_groups: Json[] }>('/v2.0/security-groups')).body.security_groups.some((x) => x.id === g.id))
      const net = await alice.create('networks', 'network', { name: 'sg-net' })
      await alice.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.5.0.0/24' })
      // Bob cannot put Alice's group on his port.
      const bobNet = await bob.create('networks', 'network', { name: 'bob-net' })
      assertNeutronError(await bob.post('/v2.0/ports', { port: { network_id: bobNet.id, security_groups: [g.id] } }), 404, 'SecurityGroupNotFound')
      const port = await alice.create('ports', 'port', { network_id: net.id, security_groups: [g.id] })
      assert.deepEqual(port.security_groups, [g.id])
      assertNeutronError(await alice.del(`/v2.0/security-groups/${g.id}`), 409, 'SecurityGroupInUse')
      const cleared = await alice.put<{ port: Json }>(`/v2.0/ports/${port.id}`, { port: { security_groups: [] } })
      assert.deepEqual(cleared.body.port.security_groups, [])
      assert.equal((await alice.del(`/v2.0/security-groups/${g.id}`)).status, 204)
    })

    it('enforces the security group quota', async () => {
      const carol = await projectMember(server, 'carol')
      await root.put(`/v2.0/quotas/${carol.projectId}`, { quota: { security_group: 2 } })
      const c = client(server, carol)
      await c.create('security-groups', 'security_group', { name: 'one' }) // with default: 2
      assertNeutronError(await c.post('/v2.0/security-groups', { security_group: { name: 'two' } }), 409, 'OverQuota', /security_group/)
    })
  })
}
