/**
 * Host protocol versions: agents report theirs, the resource manager shows it, and a command newer than a host's
 * agent fails at once with the upgrade fault, never enqueued (src/contracts/host/commands.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { agentConfig, killAgent, onboardAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { HOST_COMMANDS, HOST_PROTOCOL_VERSION } from '../../src/contracts/host/commands.js'

describe('host protocol versions: an agent that was not upgraded', () => {
  let server: TestServer
  let api: ComputeClient
  const hosts: ScratchHost[] = []
  const agents: ChildProcess[] = []
  let old: ScratchHost
  let current: ScratchHost
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '10', PCC_RECONCILE_SECONDS: '0' } })
    const admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, admin)
    for (const [name, protocolVersion] of [['proto-old', 1], ['proto-new', undefined]] as const) {
      const onboarded = await onboardAgent(api, name, server.url, { protocolVersion })
      hosts.push(onboarded.host)
      agents.push(onboarded.agent)
    }
    ;[old, current] = hosts
  })
  after(async () => {
    for (const a of agents) await killAgent(a)
    await server?.close()
    for (const h of hosts) rmSync(h.root, { recursive: true, force: true })
  })

  it('shows each host\'s agent version and protocol', async () => {
    for (const [host, protocol] of [[old, 1], [current, HOST_PROTOCOL_VERSION]] as const) {
      const view = (await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).body as { agent_version: string; protocol_version: number }
      assert.equal(view.protocol_version, protocol, host.hostname)
      assert.match(view.agent_version, /^\d+\.\d+\.\d+/)
    }
  })

  it('refuses a live migration to it at once: the upgrade fault, the server runs on, nothing enqueued', async () => {
    assert.ok(HOST_COMMANDS.prepareLiveMigration.since > 1, 'live migration needs a newer protocol than the old agent speaks')
    const image = await api.bootImage()
    const { id } = await api.create({ name: 'stays', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${current.hostname}` })
    const settled = () => until(`server ${id} to settle`, 30_000, async () => {
      const s = await api.server(id)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    })
    assert.equal((await settled()).status, 'ACTIVE')
    const migrate = await api.action(id, 'os-migrateLive', { host: old.hostname, block_migration: 'auto' })
    assert.equal(migrate.status, 202, JSON.stringify(migrate.body))
    const after = await until('the migration to fail', 30_000, async () => {
      const s = await settled()
      const faults = await server.deps.store.db.selectFrom('instance_faults').select('message').where('server_id', '=', id).execute()
      return faults.length > 0 ? { s, faults } : undefined
    })
    assert.equal(after.s.status, 'ACTIVE')
    assert.equal(after.s['OS-EXT-SRV-ATTR:host'], current.hostname)
    assert.match(after.faults.at(-1)!.message, new RegExp(`^pcc-agent on host ${old.hostname} speaks protocol 1; this needs ${HOST_COMMANDS.prepareLiveMigration.since}: upgrade it`))
    const migrationCommands = await server.deps.store.db
      .selectFrom('host_commands')
      .select(['host_id', 'op'])
      .where('op', 'in', ['prepareLiveMigration', 'liveMigrateTo', 'finishLiveMigration', 'abortLiveMigration'])
      .execute()
    assert.deepEqual(migrationCommands, [], 'no live migration command was enqueued for either host')
    // Commands of protocol 1 still reach the old agent.
    const { id: other } = await api.create({ name: 'on-old', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${old.hostname}` })
    const onOld = await until(`server ${other} to settle`, 30_000, async () => {
      const s = await api.server(other)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    })
    assert.deepEqual([onOld.status, onOld['OS-EXT-SRV-ATTR:host']], ['ACTIVE', old.hostname])
  })

  it("answers 409 to an abort or force-complete of a live migration whose source's agent is too old, enqueuing nothing", async () => {
    const image = await api.bootImage()
    const { id } = await api.create({ name: 'from-old', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${old.hostname}` })
    await until(`server ${id} ACTIVE`, 30_000, async () => ((await api.server(id))?.status === 'ACTIVE' ? true : undefined))
    // The state of a live migration the old host sends (it could not, on protocol 1: the state is set directly).
    const db = server.deps.store.db
    await db.updateTable('servers').set({ task_state: 'migrating' }).where('id', '=', id).execute()
    await db
      .insertInto('migrations')
      .values({ id: 9001, uuid: '00000000-0000-4000-8000-000000009001', server_id: id, project_id: server.bootstrap.adminProjectId, user_id: server.bootstrap.adminUserId, request_id: 'req-old', migration_type: 'live-migration', status: 'running', source_host: old.hostname, dest_host: current.hostname, old_flavor_id: '1', new_flavor_id: '1', created_at: Date.now(), updated_at: null })
      .execute()
    const abort = await api.call('DELETE', `/servers/${id}/migrations/9001`)
    assert.equal(abort.status, 409, JSON.stringify(abort.body))
    assert.match(JSON.stringify(abort.body), new RegExp(`speaks protocol 1; this needs ${HOST_COMMANDS.cancelLiveMigration.since}: upgrade it`))
    assert.equal((await api.call('POST', `/servers/${id}/migrations/9001/action`, { force_complete: null })).status, 409)
    const sent = await db.selectFrom('host_commands').select('op').where('op', 'in', ['cancelLiveMigration', 'forceCompleteLiveMigration']).execute()
    assert.deepEqual(sent, [])
    const status = await db.selectFrom('migrations').select('status').where('id', '=', 9001).executeTakeFirstOrThrow()
    assert.equal(status.status, 'running', 'nothing changed')
    await db.updateTable('servers').set({ task_state: null }).where('id', '=', id).execute()
  })

  it('cannot quiesce a guest on it: the upgrade fault at once, nothing enqueued; a current agent takes both commands', async () => {
    const image = await api.bootImage()
    const { id } = await api.create({ name: 'frozen-old', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${old.hostname}` })
    await until(`server ${id} ACTIVE`, 30_000, async () => ((await api.server(id))?.status === 'ACTIVE' ? true : undefined))
    // What a volume-backed createImage asks of the server's host; any DriverError counts as "cannot quiesce".
    await assert.rejects(server.deps.conductor.quiesceGuest(id), (err: Error) => err.name === 'DriverError' && new RegExp(`speaks protocol 1; this needs ${HOST_COMMANDS.quiesceGuest.since}: upgrade it`).test(err.message))
    assert.equal(HOST_COMMANDS.quiesceGuest.since, 6)
    const sent = await server.deps.store.db.selectFrom('host_commands').select('op').where('op', 'in', ['quiesceGuest', 'unquiesceGuest']).execute()
    assert.deepEqual(sent, [])
    // The current agent takes it (its simulated guest freezes and thaws).
    const { id: fresh } = await api.create({ name: 'frozen-new', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${current.hostname}` })
    await until(`server ${fresh} ACTIVE`, 30_000, async () => ((await api.server(fresh))?.status === 'ACTIVE' ? true : undefined))
    await server.deps.conductor.quiesceGuest(fresh)
    await server.deps.conductor.unquiesceGuest(fresh)
    const ops = await server.deps.store.db.selectFrom('host_commands').select('op').where('op', 'in', ['quiesceGuest', 'unquiesceGuest']).orderBy('created_at').execute()
    assert.deepEqual(ops.map((o) => o.op), ['quiesceGuest', 'unquiesceGuest'])
  })

  it("attaches and detaches interfaces of a guest on it as before (the port bound, nothing plugged); a current agent plugs them", async () => {
    assert.equal(HOST_COMMANDS.attachNic.since, 7)
    const image = await api.bootImage()
    const network = (await api.other('POST', '/network/v2.0/networks', { network: { name: 'hotplug' } })).body as { network: { id: string } }
    const subnet = await api.other('POST', '/network/v2.0/subnets', { subnet: { network_id: network.network.id, ip_version: 4, cidr: '192.168.77.0/24' } })
    assert.equal(subnet.status, 201, JSON.stringify(subnet.body))
    const db = server.deps.store.db
    const nicCommands = async (hostId: string) => (await db.selectFrom('host_commands').select('op').where('host_id', '=', hostId).where('op', 'in', ['attachNic', 'detachNic']).orderBy('created_at').execute()).map((c) => c.op)
    for (const host of [old, current]) {
      const { id } = await api.create({ name: `nic-${host.hostname}`, imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${host.hostname}` })
      await until(`server ${id} ACTIVE`, 30_000, async () => ((await api.server(id))?.status === 'ACTIVE' ? true : undefined))
      const attached = await api.call('POST', `/servers/${id}/os-interface`, { interfaceAttachment: { net_id: network.network.id } })
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      const portId = (attached.body as { interfaceAttachment: { port_id: string } }).interfaceAttachment.port_id
      const port = await db.selectFrom('ports').select(['device_id', 'binding_host_id']).where('id', '=', portId).executeTakeFirstOrThrow()
      assert.deepEqual([port.device_id, port.binding_host_id], [id, host.hostname], 'bound to the server on its host')
      assert.equal((await api.call('DELETE', `/servers/${id}/os-interface/${portId}`)).status, 202)
      assert.equal(await db.selectFrom('ports').select('id').where('id', '=', portId).executeTakeFirst(), undefined, 'the port made for it is gone')
      assert.deepEqual(await nicCommands(host.hostId), host === old ? [] : ['attachNic', 'detachNic'], host.hostname)
    }
  })

  it('answers 400 to a heartbeat whose protocol is not a version', async () => {
    const res = await fetch(`${server.url}/resmgr/v1/hosts/${old.hostId}/heartbeat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${String(agentConfig(old.root).credential)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ facts: { protocol_version: 'two' } }),
    })
    assert.equal(res.status, 400)
    assert.match(await res.text(), /protocol_version/)
  })
})
