/**
 * Neutron's agents API (/v2.0/agents): the network services of hosts' roles, alive by their host's heartbeat,
 * admin only (a member's list is empty, one agent not found), and an L3 or DHCP agent set down taking its
 * routers or DHCP servers off its host's data plane. Hosts are registered through the real registration API and
 * given roles as an agent reports them; no agent runs.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { HostNetworkAnswer } from '../../src/contracts/network/dataplane.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { admin, assertNeutronError, client, giveRole, projectMember, registerHost, resmgr, type Client, type Json, type RegisteredHost } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`network API: agents (${dialect})`, () => {
    let server: TestServer
    let root: Client
    let alice: Client
    let adminToken: string
    let compute: RegisteredHost
    let netnode: RegisteredHost
    let spare: RegisteredHost

    const agentsOf = async (hostname: string): Promise<Json[]> => (await root.get<{ agents: Json[] }>(`/v2.0/agents?host=${hostname}`)).body.agents
    const agentOf = async (hostname: string, type: string): Promise<Json> => (await agentsOf(hostname)).find((a) => a.agent_type === type)
    const state = async (host: RegisteredHost) => (await resmgr(server, 'GET', `/v1/hosts/${host.id}/network`, host.credential)).body as HostNetworkAnswer

    before(async () => {
      server = await startTestServer({ dialect })
      const a = await admin(server)
      adminToken = a.token
      root = client(server, a)
      alice = client(server, await projectMember(server, 'alice'))
      compute = await registerHost(server, adminToken, 'agents-compute', '192.0.2.11')
      netnode = await registerHost(server, adminToken, 'agents-net-1', '192.0.2.12')
      spare = await registerHost(server, adminToken, 'agents-net-2', '192.0.2.13')
      await giveRole(server, adminToken, compute, 'hypervisor')
      await giveRole(server, adminToken, netnode, 'network')
      await giveRole(server, adminToken, spare, 'network')
    })
    after(() => server.close())

    it("shows each host's network services as Neutron's agents, alive by its heartbeat", async () => {
      const onCompute = await agentsOf(compute.hostname)
      assert.deepEqual(onCompute.map((a) => a.agent_type).sort(), ['DHCP agent', 'Linux bridge agent', 'Metadata agent'])
      assert.deepEqual((await agentsOf(netnode.hostname)).map((a) => a.agent_type).sort(), ['L3 agent', 'Linux bridge agent'])
      const l2 = onCompute.find((a) => a.agent_type === 'Linux bridge agent')
      assert.equal(l2.binary, 'neutron-linuxbridge-agent')
      assert.equal(l2.alive, true)
      assert.equal(l2.admin_state_up, true)
      assert.equal(l2.availability_zone, null)
      assert.deepEqual(l2.configurations, { tunnel_types: ['vxlan'], tunneling_ip: '192.0.2.11' })
      assert.match(l2.heartbeat_timestamp, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      const dhcp = onCompute.find((a) => a.agent_type === 'DHCP agent')
      assert.equal(dhcp.topic, 'dhcp_agent')
      assert.equal(typeof dhcp.availability_zone, 'string')
      const shown = await root.get<{ agent: Json }>(`/v2.0/agents/${dhcp.id}`)
      // The heartbeat may land between the two reads.
      assert.deepEqual({ ...shown.body.agent, heartbeat_timestamp: null }, { ...dhcp, heartbeat_timestamp: null })
      const byType = await root.get<{ agents: Json[] }>(`/v2.0/agents?agent_type=L3%20agent&fields=host&fields=id`)
      assert.deepEqual(byType.body.agents.map((a) => a.host).sort(), [netnode.hostname, spare.hostname])
      assert.deepEqual(Object.keys(byType.body.agents[0]).sort(), ['host', 'id'])
      // A host whose heartbeat stopped has dead agents.
      await server.deps.store.db.updateTable('hosts').set({ last_heartbeat_at: Date.now() - 3_600_000 }).where('id', '=', compute.id).execute()
      assert.equal((await agentOf(compute.hostname, 'DHCP agent')).alive, false)
      assert.equal((await resmgr(server, 'POST', `/v1/hosts/${compute.id}/heartbeat`, compute.credential, {})).status, 200)
      await server.deps.onboarding.flushBeats()
      assert.equal((await agentOf(compute.hostname, 'DHCP agent')).alive, true)
    })

    it('is admin only: a member lists none and finds none; bad input changes nothing', async () => {
      const dhcp = await agentOf(compute.hostname, 'DHCP agent')
      assert.deepEqual((await alice.get<{ agents: Json[] }>('/v2.0/agents')).body.agents, [])
      assertNeutronError(await alice.get(`/v2.0/agents/${dhcp.id}`), 404, 'AgentNotFound')
      assertNeutronError(await alice.put(`/v2.0/agents/${dhcp.id}`, { agent: { admin_state_up: false } }), 404, 'AgentNotFound')
      assertNeutronError(await alice.del(`/v2.0/agents/${dhcp.id}`), 404, 'AgentNotFound')
      assertNeutronError(await root.get(`/v2.0/agents/${randomUUID()}`), 404, 'AgentNotFound')
      assertNeutronError(await root.put(`/v2.0/agents/${dhcp.id}`, { agent: { host: 'elsewhere' } }), 400, 'BadRequest')
      assertNeutronError(await root.put(`/v2.0/agents/${dhcp.id}`, { agent: { admin_state_up: 'sideways' } }), 400, 'BadRequest')
      assert.equal((await server.deps.store.db.selectFrom('network_agents').selectAll().execute()).length, 0, 'nothing stored')
      const anonymous = await fetch(`${server.url}/network/v2.0/agents`)
      assert.equal(anonymous.status, 401)
    })

    it('updates the admin state and description; deleting forgets them', async () => {
      const l2 = await agentOf(compute.hostname, 'Linux bridge agent')
      const updated = await root.put<{ agent: Json }>(`/v2.0/agents/${l2.id}`, { agent: { description: 'bridges of rack 4', admin_state_up: false } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.agent.description, 'bridges of rack 4')
      assert.equal(updated.body.agent.admin_state_up, false)
      const again = await root.put<{ agent: Json }>(`/v2.0/agents/${l2.id}`, { agent: { admin_state_up: true } })
      assert.deepEqual([again.body.agent.admin_state_up, again.body.agent.description], [true, 'bridges of rack 4'])
      assert.equal((await root.del(`/v2.0/agents/${l2.id}`)).status, 204)
      const back = await agentOf(compute.hostname, 'Linux bridge agent')
      assert.deepEqual([back.id, back.admin_state_up, back.description], [l2.id, true, null], 'the host still runs it: listed again, as it was registered')
    })

    it("moves routers off a host whose L3 agent is set down, and stops a DHCP agent's servers", async () => {
      const ext = await root.create('networks', 'network', { name: 'agents-ext', 'router:external': true, 'provider:network_type': 'flat', 'provider:physical_network': 'public' })
      await root.create('subnets', 'subnet', { network_id: ext.id, ip_version: 4, cidr: '198.51.100.0/24', enable_dhcp: false })
      const router = await root.create('routers', 'router', { name: 'agents-r', external_gateway_info: { network_id: ext.id } })
      const hostsRunning = async () => (await Promise.all([netnode, spare].map(async (h) => ((await state(h)).state.routers.some((r) => r.id === router.id) ? h.hostname : undefined)))).filter(Boolean)
      const [first] = await hostsRunning()
      assert.ok(first, 'placed on one network host')
      const firstL3 = await agentOf(first, 'L3 agent')
      assert.equal((await root.put(`/v2.0/agents/${firstL3.id}`, { agent: { admin_state_up: false } })).status, 200)
      assert.deepEqual(await hostsRunning(), [first === netnode.hostname ? spare.hostname : netnode.hostname], 'moved to the other')
      assert.equal((await root.put(`/v2.0/agents/${firstL3.id}`, { agent: { admin_state_up: true } })).status, 200)
      assert.deepEqual(await hostsRunning(), [first])

      const net = await root.create('networks', 'network', { name: 'agents-dhcp' })
      await root.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.44.0.0/24' })
      await root.create('ports', 'port', { network_id: net.id, device_id: randomUUID(), device_owner: 'compute:nova', 'binding:host_id': compute.hostname })
      const dhcpOf = async () => (await state(compute)).state.networks.find((n) => n.id === net.id)!.dhcp
      assert.ok(await dhcpOf(), 'DHCP served on the host of the guest')
      const dhcp = await agentOf(compute.hostname, 'DHCP agent')
      assert.equal((await root.put(`/v2.0/agents/${dhcp.id}`, { agent: { admin_state_up: false } })).status, 200)
      assert.equal(await dhcpOf(), null, 'a DHCP agent set down serves nothing')
      assert.equal((await root.put(`/v2.0/agents/${dhcp.id}`, { agent: { admin_state_up: true } })).status, 200)
      assert.ok(await dhcpOf())
    })

    it('lists the agent extension and resource', async () => {
      const ext = await alice.get<{ extension: Json }>('/v2.0/extensions/agent')
      assert.equal(ext.status, 200)
      assert.ok((await alice.get<{ resources: Json[] }>('/v2.0/')).body.resources.some((r) => r.name === 'agent'))
    })
  })
}
