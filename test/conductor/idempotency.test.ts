import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ComputeClient } from '../../src/testkit/compute-api.js'
import { actionsOf, capacityProblems, traceServer } from '../../src/testkit/compute-trace.js'
import { COMPUTE_TASK_KINDS, type ActionTaskPayload, type BuildTaskPayload } from '../../src/server/compute/tasks.js'
import type { ServerTable } from '../../src/server/storage/tables/compute.js'

const idle = (s: ServerTable) => s.task_state === null && s.vm_state !== 'building'

describe('compute tasks run twice (a crash between the work and the task completing)', () => {
  let server: TestServer
  let api: ComputeClient
  let image: string
  before(async () => {
    server = await startTestServer({ env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '0', PCC_RECONCILE_SECONDS: '0' } })
    const { token } = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })
    api = new ComputeClient(server.url, token)
    image = await api.bootImage()
  })
  after(() => server.close())
  const db = () => server.deps.store.db

  /** POST /servers for `count` servers; their ids in launch order and the request id that names their build. */
  async function create(count = 1): Promise<{ serverIds: string[]; requestId: string }> {
    const r = await api.call('POST', '/servers', { server: { name: 'twice', imageRef: image, flavorRef: '1', networks: 'none', min_count: count, max_count: count, return_reservation_id: true } })
    assert.equal(r.status, 202, JSON.stringify(r.body))
    const servers = await api.servers(`reservation_id=${r.body.reservation_id}`)
    servers.sort((a, b) => a['OS-EXT-SRV-ATTR:launch_index'] - b['OS-EXT-SRV-ATTR:launch_index'])
    return { serverIds: servers.map((s) => s.id as string), requestId: r.requestId }
  }

  /** POST /servers/{id}/action; the request id that names the action. */
  async function act(id: string, name: string): Promise<string> {
    const r = await api.action(id, name)
    assert.equal(r.status, 202, JSON.stringify(r.body))
    return r.requestId
  }

  async function settle(taskId: string): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const t = await server.deps.queue.get(taskId)
      if (t && (t.status === 'done' || t.status === 'failed')) return
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error('task did not settle')
  }

  it('a build that already finished changes nothing the second time', async () => {
    const { serverIds, requestId } = await create(2)
    for (const id of serverIds) await traceServer(db(), id, idle)
    const before = await Promise.all(serverIds.map((id) => actionsOf(db(), id)))
    const task = await server.deps.queue.enqueue<BuildTaskPayload>({ kind: COMPUTE_TASK_KINDS.build, payload: { serverIds, requestId } })
    server.deps.runner.wake()
    await settle(task.id)
    assert.equal((await server.deps.queue.get(task.id))!.status, 'done')
    const afterRun = await Promise.all(serverIds.map((id) => actionsOf(db(), id)))
    assert.deepEqual(afterRun, before)
    assert.equal((await db().selectFrom('allocations').select('server_id').where('server_id', 'in', serverIds).execute()).length, 2)
    assert.deepEqual(await capacityProblems(db()), [])
  })

  it('a build interrupted after its claim resumes without claiming twice', async () => {
    const { serverIds, requestId } = await create()
    const id = serverIds[0]
    await traceServer(db(), id, idle)
    // Put it back where a crash after the claim and the networking step would have left it.
    await db().updateTable('servers').set({ vm_state: 'building', task_state: 'networking', launched_at: null, progress: 10 }).where('id', '=', id).execute()
    const task = await server.deps.queue.enqueue<BuildTaskPayload>({ kind: COMPUTE_TASK_KINDS.build, payload: { serverIds, requestId } })
    server.deps.runner.wake()
    const { final } = await traceServer(db(), id, idle)
    await settle(task.id)
    assert.equal(final.vm_state, 'active')
    assert.ok(final.launched_at)
    const events = (await actionsOf(db(), id))[0].events
    assert.deepEqual(events.map((e) => [e.event, e.result]), [
      ['conductor_schedule_and_build_instances', 'Success'],
      ['compute__do_build_and_run_instance', 'Success'],
    ])
    assert.equal((await db().selectFrom('allocations').select('server_id').where('server_id', '=', id).execute()).length, 1)
    assert.deepEqual(await capacityProblems(db()), [])
  })

  it('a migration interrupted after claiming its destination reuses that claim', async () => {
    const { serverIds } = await create()
    const id = serverIds[0]
    const { final: built } = await traceServer(db(), id, idle)
    const requestId = await act(id, 'migrate')
    const { final: migrated } = await traceServer(db(), id, (s) => s.task_state === null)
    assert.equal(migrated.vm_state, 'resized')
    // Rewind to just after the claim (both allocations held, still on the source) and run the task again.
    await db()
      .updateTable('servers')
      .set({ vm_state: 'active', task_state: 'resize_migrating', host_id: built.host_id, host: built.host, node: built.node, flavor: built.flavor })
      .where('id', '=', id)
      .execute()
    const payload: ActionTaskPayload = { serverId: id, action: 'migrate', params: {}, requestId, before: { vmState: 'active', powerState: 1 } }
    const task = await server.deps.queue.enqueue({ kind: COMPUTE_TASK_KINDS.action, payload })
    server.deps.runner.wake()
    const { final } = await traceServer(db(), id, (s) => s.task_state === null)
    await settle(task.id)
    assert.equal(final.vm_state, 'resized')
    assert.equal(final.host_id, migrated.host_id, 'the same destination')
    const claims = await db().selectFrom('allocations').select('host_id').where('server_id', '=', id).execute()
    assert.equal(claims.length, 2, 'source and destination, not a third')
    assert.deepEqual(await capacityProblems(db()), [])
  })

  it('an action whose server already left its task states only finishes the instance action', async () => {
    const { serverIds } = await create()
    const id = serverIds[0]
    await traceServer(db(), id, idle)
    const requestId = await act(id, 'os-stop')
    await traceServer(db(), id, (s) => s.task_state === null)
    const payload: ActionTaskPayload = { serverId: id, action: 'os-stop', params: {}, requestId, before: { vmState: 'active', powerState: 1 } }
    const task = await server.deps.queue.enqueue({ kind: COMPUTE_TASK_KINDS.action, payload })
    server.deps.runner.wake()
    await settle(task.id)
    const row = await db().selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    assert.equal(row.vm_state, 'stopped')
    assert.equal(row.task_state, null)
  })
})
