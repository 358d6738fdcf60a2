/**
 * Abort (DELETE /servers/{id}/migrations/{mid}) and force-complete (POST …/{mid}/action) of a live migration under
 * way, against simulated hosts whose live migrations take a while: abort leaves the server ACTIVE on its source
 * with the migration `cancelled`, force-complete ends it sooner at the destination; a queued one (2.65) is
 * cancelled before any host sends; each refusal with Nova's status; the instance actions record both.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import type { LiveMigrationHandle } from '../../src/contracts/host/compute-driver.js'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'
import { adminEnv, openstack } from '../../src/testkit/openstack.js'

/** Long enough that nothing completes a copy before the test acts on it. */
const COPY_MS = 60_000

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const seen = await probe()
    if (seen !== undefined) return seen
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.fail(`timed out waiting for ${what}`)
}

const server = async (tb: ComputeTestbed, id: string) => (await call(tb, tb.admin, 'GET', `/servers/${id}`, undefined, '2.96')).body.server

const idle = (tb: ComputeTestbed, id: string) =>
  until(`${id} idle`, async () => {
    const s = await server(tb, id)
    return s.status !== 'MIGRATING' && s['OS-EXT-STS:task_state'] === null ? s : undefined
  })

/** Starts a live migration and answers it once it has the status wanted. */
async function liveMigrate(tb: ComputeTestbed, id: string, status: string): Promise<{ id: number }> {
  const r = await call(tb, tb.admin, 'POST', `/servers/${id}/action`, { 'os-migrateLive': { host: null, block_migration: 'auto' } }, '2.96')
  assert.equal(r.status, 202, JSON.stringify(r.body))
  return until(`migration ${status}`, async () => (await call(tb, tb.admin, 'GET', `/servers/${id}/migrations`, undefined, '2.23')).body.migrations.find((m: { status: string }) => m.status === status))
}

const migrationStatus = async (tb: ComputeTestbed, id: string, mid: number) =>
  (await call(tb, tb.admin, 'GET', `/os-migrations?instance_uuid=${id}`, undefined, '2.23')).body.migrations.find((m: { id: number }) => m.id === mid)?.status

for (const dialect of DIALECTS) {
  test(`live migration abort and force-complete (${dialect})`, { timeout: 240_000 }, async () => {
    const tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2' }, true)
    try {
      for (const h of tb.server.deps.conductor.simulatedHosts) h.driver.liveMigrationMs = COPY_MS
      const created = await call(tb, tb.member, 'POST', '/servers', createBody('mover'), '2.96')
      assert.equal(created.status, 202)
      const id: string = created.body.server.id
      const source = (await until('ACTIVE', async () => ((await server(tb, id)).status === 'ACTIVE' ? server(tb, id) : undefined)))['OS-EXT-SRV-ATTR:host']
      const path = (mid: number | string) => `/servers/${id}/migrations/${mid}`

      // Abort while the source copies: 202, then the server is ACTIVE on its source, the migration cancelled.
      const first = await liveMigrate(tb, id, 'running')
      assert.equal((await call(tb, tb.admin, 'DELETE', path(first.id), undefined, '2.23')).status, 404, 'abort is 2.24')
      assert.equal((await call(tb, tb.member, 'DELETE', path(first.id), undefined, '2.24')).status, 403, 'admin only')
      assert.equal((await call(tb, tb.other, 'DELETE', path(first.id), undefined, '2.24')).status, 404, "another project's server")
      const unknown = await call(tb, tb.admin, 'DELETE', path(99999), undefined, '2.24')
      assert.equal(unknown.status, 404)
      assert.match(unknown.body.itemNotFound.message, /Migration 99999 not found for instance/)
      const started = Date.now()
      assert.equal((await call(tb, tb.admin, 'DELETE', path(first.id), undefined, '2.24')).status, 202)
      const after = await idle(tb, id)
      assert.ok(Date.now() - started < COPY_MS / 2, 'the copy stopped, it did not run out')
      assert.equal(after.status, 'ACTIVE')
      assert.equal(after['OS-EXT-SRV-ATTR:host'], source, 'on its source')
      assert.equal(after.fault, undefined, 'no fault')
      assert.equal(await migrationStatus(tb, id, first.id), 'cancelled')
      const guest = await tb.server.deps.conductor.simulatedHosts.find((h) => h.hostname === source)!.driver.info(id)
      assert.equal(guest?.powerState, 1, 'the guest runs on at the source')
      const allocations = await tb.server.deps.store.db.selectFrom('allocations').select('host_id').distinct().where('server_id', '=', id).execute()
      assert.equal(allocations.length, 1, "the destination's claim went back")
      const actions = (await call(tb, tb.admin, 'GET', `/servers/${id}/os-instance-actions`, undefined, '2.96')).body.instanceActions
      const cancel = actions.find((a: { action: string }) => a.action === 'live_migration_cancel')
      assert.ok(cancel, JSON.stringify(actions))
      const events = (await call(tb, tb.admin, 'GET', `/servers/${id}/os-instance-actions/${cancel.request_id}`, undefined, '2.96')).body.instanceAction.events
      assert.deepEqual(events.map((e: { event: string; result: string }) => [e.event, e.result]), [['compute_live_migration_abort', 'Success']])
      assert.equal(actions.find((a: { action: string }) => a.action === 'live-migration').message, null, 'the live migration itself did not fail')

      // Not migrating any more: 409; a migration that is not running (the cancelled one) while another runs: 400.
      assert.equal((await call(tb, tb.admin, 'DELETE', path(first.id), undefined, '2.24')).status, 409)
      assert.equal((await call(tb, tb.admin, 'POST', `${path(first.id)}/action`, { force_complete: null }, '2.22')).status, 409)
      const second = await liveMigrate(tb, id, 'running')
      const wrongState = await call(tb, tb.admin, 'DELETE', path(first.id), undefined, '2.24')
      assert.equal(wrongState.status, 400)
      assert.match(wrongState.body.badRequest.message, new RegExp(`Migration ${first.id} state of instance ${id} is cancelled`))
      assert.equal((await call(tb, tb.admin, 'POST', `${path(first.id)}/action`, { force_complete: null }, '2.22')).status, 400)

      // Force-complete: refusals first, then 202 and the migration completes at once, on the destination.
      assert.equal((await call(tb, tb.admin, 'POST', `${path(second.id)}/action`, { force_complete: null }, '2.21')).status, 404, 'force_complete is 2.22')
      assert.equal((await call(tb, tb.member, 'POST', `${path(second.id)}/action`, { force_complete: null }, '2.22')).status, 403)
      assert.equal((await call(tb, tb.other, 'POST', `${path(second.id)}/action`, { force_complete: null }, '2.22')).status, 404)
      assert.equal((await call(tb, tb.admin, 'POST', `${path(second.id)}/action`, { force_complete: {} }, '2.22')).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', `${path(second.id)}/action`, { force_complete: null, extra: 1 }, '2.22')).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', `${path(99999)}/action`, { force_complete: null }, '2.22')).status, 400, "Nova: an unknown migration is 400 here")
      assert.equal(await migrationStatus(tb, id, second.id), 'running', 'refusals changed nothing')
      const forced = Date.now()
      assert.equal((await call(tb, tb.admin, 'POST', `${path(second.id)}/action`, { force_complete: null }, '2.22')).status, 202)
      const moved = await idle(tb, id)
      assert.ok(Date.now() - forced < COPY_MS / 2, 'the copy converged at once')
      assert.equal(moved.status, 'ACTIVE')
      assert.notEqual(moved['OS-EXT-SRV-ATTR:host'], source)
      assert.equal(await migrationStatus(tb, id, second.id), 'completed')
      const dest = tb.server.deps.conductor.simulatedHosts.find((h) => h.hostname === moved['OS-EXT-SRV-ATTR:host'])!
      assert.equal((await dest.driver.info(id))?.powerState, 1, 'the guest paused on the source runs at the destination')
      const forceAction = (await call(tb, tb.admin, 'GET', `/servers/${id}/os-instance-actions`, undefined, '2.96')).body.instanceActions.find((a: { action: string }) => a.action === 'live_migration_force_complete')
      assert.ok(forceAction)

      // Queued (here: its destination still preparing): 400 before 2.65; from 2.65 cancelled before the source sends.
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      for (const h of tb.server.deps.conductor.simulatedHosts) {
        const prepare = h.driver.prepareLiveMigration.bind(h.driver)
        h.driver.prepareLiveMigration = async (spec) => {
          await gate
          return prepare(spec) as Promise<LiveMigrationHandle>
        }
      }
      const back = moved['OS-EXT-SRV-ATTR:host']
      const third = await liveMigrate(tb, id, 'preparing')
      assert.equal((await call(tb, tb.admin, 'DELETE', path(third.id), undefined, '2.64')).status, 400)
      assert.equal((await call(tb, tb.admin, 'POST', `${path(third.id)}/action`, { force_complete: null }, '2.96')).status, 400)
      assert.equal((await call(tb, tb.admin, 'DELETE', path(third.id), undefined, '2.65')).status, 202)
      assert.equal(await migrationStatus(tb, id, third.id), 'cancelled')
      release()
      const stayed = await idle(tb, id)
      assert.equal(stayed.status, 'ACTIVE')
      assert.equal(stayed['OS-EXT-SRV-ATTR:host'], back)
      assert.equal(await migrationStatus(tb, id, third.id), 'cancelled')
      const other = tb.server.deps.conductor.simulatedHosts.find((h) => h.hostname !== back)!
      assert.equal(await other.driver.info(id), undefined, 'nothing of the guest at the destination')
    } finally {
      await tb.close()
    }
  })
}

test('live migration abort and force-complete through the openstack client', { timeout: 240_000 }, async () => {
  const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '2' }, true, { publicUrlFromListen: true })
  try {
    for (const h of tb.server.deps.conductor.simulatedHosts) h.driver.liveMigrationMs = COPY_MS
    const env = adminEnv(tb.server)
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('cli-mover'), '2.96')
    const id: string = created.body.server.id
    const source = (await until('ACTIVE', async () => ((await server(tb, id)).status === 'ACTIVE' ? server(tb, id) : undefined)))['OS-EXT-SRV-ATTR:host']

    const first = await liveMigrate(tb, id, 'running')
    const abort = await openstack(['--os-compute-api-version', '2.24', 'server', 'migration', 'abort', id, String(first.id)], env)
    assert.equal(abort.code, 0, abort.stderr)
    const stayed = await idle(tb, id)
    assert.deepEqual([stayed.status, stayed['OS-EXT-SRV-ATTR:host']], ['ACTIVE', source])
    assert.equal(await migrationStatus(tb, id, first.id), 'cancelled')
    // The client shows the server's refusal: no longer running.
    const again = await openstack(['--os-compute-api-version', '2.24', 'server', 'migration', 'abort', id, String(first.id)], env)
    assert.notEqual(again.code, 0)
    assert.match(again.stderr, /409|task_state/)

    const second = await liveMigrate(tb, id, 'running')
    const force = await openstack(['--os-compute-api-version', '2.22', 'server', 'migration', 'force', 'complete', id, String(second.id)], env)
    assert.equal(force.code, 0, force.stderr)
    const moved = await idle(tb, id)
    assert.equal(moved.status, 'ACTIVE')
    assert.notEqual(moved['OS-EXT-SRV-ATTR:host'], source)
    assert.equal(await migrationStatus(tb, id, second.id), 'completed')
  } finally {
    await tb.close()
  }
})
