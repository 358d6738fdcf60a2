import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { seedAction, seedCreate, waitFor } from '../../src/testkit/compute-seed.js'
import type { GuestInfo } from '../../src/server/drivers/compute/driver.js'

describe('two agent hosts: servers on each, live migration from agent to agent', () => {
  let server: TestServer
  let admin: string
  const hosts: ScratchHost[] = []
  const agents: ChildProcess[] = []
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '10', PCC_RECONCILE_SECONDS: '0' } })
    admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
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
  const serverRow = (id: string) => server.deps.store.db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()

  it('onboards two agents, runs a server on each, live-migrates one to the other agent', async () => {
    for (const name of ['agent-a', 'agent-b']) {
      const { body: t } = await call('POST', '/resmgr/v1/registration-tokens', {})
      const h = scratchHost({ hostname: name, controller: server.url, registrationToken: t.token })
      hosts.push(h)
      agents.push(spawnAgent(h.root))
    }
    for (const h of hosts) {
      await waitFor(async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).status === 200 ? true : undefined), 20_000, 100)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, {})).status, 200)
    }
    for (const h of hosts) await waitFor(async () => ((await call('GET', `/resmgr/v1/hosts/${h.hostId}`)).body.role_status === 'ok' ? true : undefined), 20_000, 100)

    const serverIds: string[] = []
    for (const h of hosts) serverIds.push(...(await seedCreate(server.deps, { name: `on-${h.hostname}`, availabilityZone: `nova:${h.hostname}` })).serverIds)
    const rows = await waitFor(async () => {
      const r = await Promise.all(serverIds.map(serverRow))
      return r.every((s) => s.vm_state === 'active') ? r : undefined
    })
    assert.deepEqual(rows.map((r) => r.host), ['agent-a', 'agent-b'])

    const victim = rows[0]
    const from = hosts.find((h) => h.hostname === victim.host)!
    const to = hosts.find((h) => h.hostname !== victim.host)!
    await waitFor(async () => ((await guestsOf(from.hostId)).includes(victim.id) ? true : undefined), 10_000, 100)
    await seedAction(server.deps, victim.id, 'os-migrateLive', { host: to.hostname, block_migration: 'auto' })
    const moved = await waitFor(async () => {
      const r = await serverRow(victim.id)
      return r.task_state === null && r.host === to.hostname ? r : undefined
    })
    assert.equal(moved.vm_state, 'active')
    // The agents agree: the destination runs it, the source let it go.
    await waitFor(async () => ((await guestsOf(to.hostId)).includes(victim.id) && !(await guestsOf(from.hostId)).includes(victim.id) ? true : undefined), 10_000, 100)
  })
})
