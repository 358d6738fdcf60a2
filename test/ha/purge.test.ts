import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { migrate } from '../../src/server/storage/migrations/index.js'
import type { ServerTable, TaskTable } from '../../src/server/storage/schema.js'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { purgeOldRows } from '../../src/server/tasks/purge-job.js'
import { DIALECTS, startTestServer, type Dialect } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'

const DAY = 86_400_000
let displayId = 1

function serverRow(overrides: Partial<ServerTable>): ServerTable {
  const now = Date.now()
  return {
    id: randomUUID(), rev: 0, display_id: displayId++, name: 'vm', description: null, project_id: 'p', user_id: 'u',
    host_id: null, host: null, node: null, vm_state: 'active', task_state: null, power_state: 1,
    flavor: '{}', old_flavor: null, new_flavor: null, image_id: null, key_name: null, key_data: null,
    metadata: '{}', access_ip_v4: '', access_ip_v6: '', availability_zone: null, pinned_availability_zone: null,
    config_drive: 0, disk_config: 'MANUAL', user_data: null, hostname: null, locked: 0, locked_by: null,
    locked_reason: null, launch_index: 0, reservation_id: 'r-1', root_device_name: null, kernel_id: null,
    ramdisk_id: null, progress: 0, trusted_image_certificates: null, scheduler_hints: null, security_groups: '[]',
    requested_networks: '"none"', block_devices: '[]', created_at: now - 30 * DAY, updated_at: now,
    launched_at: null, terminated_at: null, deleted_at: null, deleted: 0,
    ...overrides,
  }
}

function taskRow(overrides: Partial<TaskTable>): TaskTable {
  const now = Date.now()
  return {
    id: randomUUID(), kind: 'test', subject_id: null, payload: '{}', status: 'done', attempts: 1, max_attempts: 5,
    run_after: now, lease_owner: null, lease_expires_at: null, last_error: null, idempotency_key: null,
    created_at: now - 30 * DAY, updated_at: now, finished_at: now, ...overrides,
  }
}

async function openFresh(dialect: Dialect): Promise<{ store: Store; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-purge-'))
  const store = await openStore({ dataDir: dir, databaseUrl: dialect === 'postgres' ? await freshDatabase() : '' })
  await migrate(store)
  return { store, cleanup: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) }
}

async function withAction(store: Store, serverId: string): Promise<string> {
  const actionId = randomUUID()
  await store.db.insertInto('instance_actions').values({ id: actionId, server_id: serverId, action: 'create', request_id: 'req-x', user_id: 'u', project_id: 'p', message: null, start_time: 1, finish_time: 2, updated_at: 2 }).execute()
  await store.db.insertInto('instance_action_events').values({ id: randomUUID(), action_id: actionId, event: 'compute__do_build_and_run_instance', start_time: 1, finish_time: 2, result: 'Success', traceback: null, host: null, details: null }).execute()
  return actionId
}

for (const dialect of DIALECTS) {
  test(`${dialect}: purge removes finished tasks and soft-deleted servers older than the retention, and nothing else`, async () => {
    const { store, cleanup } = await openFresh(dialect)
    try {
      const now = Date.now()
      const oldDone = taskRow({ finished_at: now - 8 * DAY })
      const oldFailed = taskRow({ status: 'failed', finished_at: now - 8 * DAY, last_error: 'x' })
      const recentDone = taskRow({ finished_at: now - 6 * DAY })
      const queuedOld = taskRow({ status: 'queued', finished_at: null, created_at: now - 30 * DAY })
      const runningOld = taskRow({ status: 'running', finished_at: null, lease_owner: 'x', lease_expires_at: now + 1000 })
      await store.db.insertInto('tasks').values([oldDone, oldFailed, recentDone, queuedOld, runningOld]).execute()

      const oldDeleted = serverRow({ deleted: 1, deleted_at: now - 8 * DAY, vm_state: 'deleted' })
      const recentDeleted = serverRow({ deleted: 1, deleted_at: now - DAY, vm_state: 'deleted' })
      const live = serverRow({})
      await store.db.insertInto('servers').values([oldDeleted, recentDeleted, live]).execute()
      const oldAction = await withAction(store, oldDeleted.id)
      await withAction(store, recentDeleted.id)
      await withAction(store, live.id)
      await store.db.insertInto('server_tags').values({ server_id: oldDeleted.id, tag: 't' }).execute()
      await store.db.insertInto('instance_faults').values({ id: randomUUID(), server_id: oldDeleted.id, code: 500, message: 'm', details: '', created_at: 1 }).execute()

      // A batch smaller than the rows proves the loop goes on until nothing is left.
      const report = await purgeOldRows(store, { retentionMs: 7 * DAY, batchSize: 1 })
      assert.deepEqual(report, { tasks: 2, servers: 1 })

      const tasks = (await store.db.selectFrom('tasks').select('id').execute()).map((r) => r.id).sort()
      assert.deepEqual(tasks, [recentDone.id, queuedOld.id, runningOld.id].sort())
      const servers = (await store.db.selectFrom('servers').select('id').execute()).map((r) => r.id).sort()
      assert.deepEqual(servers, [recentDeleted.id, live.id].sort())
      const actions = await store.db.selectFrom('instance_actions').select('server_id').execute()
      assert.equal(actions.length, 2, 'instance actions of kept servers stay')
      assert.ok(!actions.some((a) => a.server_id === oldDeleted.id))
      assert.equal((await store.db.selectFrom('instance_action_events').select('id').where('action_id', '=', oldAction).execute()).length, 0)
      assert.equal((await store.db.selectFrom('instance_action_events').select('id').execute()).length, 2)
      assert.equal((await store.db.selectFrom('server_tags').select('tag').execute()).length, 0)
      assert.equal((await store.db.selectFrom('instance_faults').select('id').execute()).length, 0)

      assert.deepEqual(await purgeOldRows(store, { retentionMs: 7 * DAY }), { tasks: 0, servers: 0 }, 'a second purge finds nothing')
    } finally {
      await cleanup()
    }
  })
}

test('the server runs the purge as a cluster job with the configured retention and interval', async () => {
  const server = await startTestServer({ dialect: 'sqlite', env: { PCC_PURGE_RETENTION_DAYS: '1', PCC_PURGE_INTERVAL_SECONDS: '1' } })
  try {
    const db = server.deps.store.db
    const now = Date.now()
    const old = taskRow({ finished_at: now - 2 * DAY })
    const fresh = taskRow({ finished_at: now - 1000 })
    await db.insertInto('tasks').values([old, fresh]).execute()
    const deadline = Date.now() + 5000
    while (Date.now() < deadline && (await db.selectFrom('tasks').select('id').where('id', '=', old.id).executeTakeFirst())) await sleep(100)
    assert.equal(await db.selectFrom('tasks').select('id').where('id', '=', old.id).executeTakeFirst(), undefined, 'the old task was not purged')
    assert.ok(await db.selectFrom('tasks').select('id').where('id', '=', fresh.id).executeTakeFirst(), 'a task inside the retention was purged')
    const job = await db.selectFrom('cluster_jobs').selectAll().where('name', '=', 'purge').executeTakeFirstOrThrow()
    assert.ok(job.runs >= 1 && job.last_error === null)
  } finally {
    await server.close()
  }
})
