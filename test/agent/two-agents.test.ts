import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import type { GuestInfo } from '../../src/contracts/host/compute-driver.js'

describe('two agent hosts: servers on each, live migration from agent to agent', () => {
  let server: TestServer
  let admin: string
  let api: ComputeClient
  const hosts: ScratchHost[] = []
  const agents: ChildProcess[] = []
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '10', PCC_RECONCILE_SECONDS: '0' } })
    admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, admin)
  })
  after(async () => {
    for (const a of agents) await killAgent(a)
    await server.close()
    for (const h of hosts) rmSync(h.root, { recursive: true, force: true })
  })

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': admin, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const guestsOf = async (hostId: string) => {
    const row = await server.deps.store.db.selectFrom('agent_hosts').select('guests').where('host_id', '=', hostId).executeTakeFirst()
    return (row ? JSON.parse(row.guests) : []).map((g: GuestInfo) => g.serverId) as string[]
  }
  /** Waits until the server rests (no task state, not building) and returns its view. */
  const settled = (id: string) =>
    until(`server ${id} to settle`, 20_000, async () => {
      const s = await api.server(id)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    })

  it('onboards two agents, runs a server on each, live-migrates one to the other agent', async () => {
    for (const name of ['agent-a', 'agent-b']) {
      const { body: t } = await call('POST', '/resmgr/v1/registration-tokens', {})
      const h = scratchHost({ hostname: name, controller: server.url, registrationToken: t.token })
      hosts.push(h)
      agents.push(spawnAgent(h.root))
    }
    for (const h of hosts) {
      await until(`${h.hostname} registered`, 20_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).status === 200 ? true : undefined))
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, {})).status, 200)
    }
    for (const h of hosts) await until(`${h.hostname}'s role applied`, 20_000, async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).body.role_status === 'ok' ? true : undefined))

    // One server forced onto each agent host (admin's zone:host form).
    const image = await api.bootImage()
    const serverIds: string[] = []
    for (const h of hosts) serverIds.push((await api.create({ name: `on-${h.hostname}`, imageRef: image, flavorRef: '1', networks: 'none', availability_zone: `nova:${h.hostname}` })).id)
    const views = await Promise.all(serverIds.map(settled))
    assert.deepEqual(views.map((v) => [v.status, v['OS-EXT-SRV-ATTR:host']]), [['ACTIVE', 'agent-a'], ['ACTIVE', 'agent-b']])

    const victim = views[0]
    const from = hosts.find((h) => h.hostname === victim['OS-EXT-SRV-ATTR:host'])!
    const to = hosts.find((h) => h.hostname !== victim['OS-EXT-SRV-ATTR:host'])!
    await until('the source agent to report the guest', 10_000, async () => ((await guestsOf(from.hostId)).includes(victim.id) ? true : undefined))
    const migrate = await api.action(victim.id, 'os-migrateLive', { host: to.hostname, block_migration: 'auto' })
    assert.equal(migrate.status, 202, JSON.stringify(migrate.body))
    const moved = await settled(victim.id)
    assert.equal(moved.status, 'ACTIVE')
    assert.equal(moved['OS-EXT-SRV-ATTR:host'], to.hostname)
    // The agents agree: the destination runs it, the source let it go.
    await until('the guest to move between the agents', 10_000, async () => ((await guestsOf(to.hostId)).includes(victim.id) && !(await guestsOf(from.hostId)).includes(victim.id) ? true : undefined))
  })
})
