/**
 * The admin password a create or an action answers travels to the host in its task and is kept no longer: once the
 * task has ended the row (kept until the purge) holds no password. Through the API with the conductor and a
 * simulated host.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { until } from '../../src/testkit/compute-api.js'
import { call, computeTestbed, createBody, IMAGE, unlimited, type ComputeTestbed } from '../compute/helpers.js'

describe('admin passwords in tasks', () => {
  let tb: ComputeTestbed

  const rests = (id: string) =>
    until(`server ${id} to rest`, 30_000, async () => {
      const s = (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
      return s['OS-EXT-STS:task_state'] === null && s.status !== 'BUILD' ? (s as { status: string }) : undefined
    })
  /** The payloads of the server's tasks once none is queued or running. */
  const endedTasks = (id: string) =>
    until(`the tasks of ${id} to end`, 30_000, async () => {
      const rows = await tb.server.deps.store.db.selectFrom('tasks').select(['payload', 'status']).where('subject_id', '=', id).execute()
      return rows.every((r) => r.status === 'done' || r.status === 'failed') ? rows.map((r) => r.payload) : undefined
    })

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
    await unlimited(tb, tb.member.projectId)
  })
  after(() => tb?.close())

  it("keeps no password in a task that has ended: a create's, a rebuild's and a rescue's", async () => {
    const pass = 'Create-Pass-7f3e9a'
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('with-pass', { adminPass: pass }), '2.96')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    assert.equal(created.body.server.adminPass, pass)
    const id = created.body.server.id as string
    assert.equal((await rests(id)).status, 'ACTIVE')

    const rebuildPass = 'Rebuild-Pass-51c2d0'
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { rebuild: { imageRef: IMAGE, adminPass: rebuildPass } }, '2.96')).status, 202)
    assert.equal((await rests(id)).status, 'ACTIVE')
    const rescue = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { rescue: null })
    assert.equal(rescue.status, 200)
    assert.equal((await rests(id)).status, 'RESCUE')

    const payloads = await endedTasks(id)
    assert.ok(payloads.length >= 3, 'the build, rebuild and rescue tasks')
    for (const secret of [pass, rebuildPass, rescue.body.adminPass as string]) {
      assert.ok(!payloads.some((p) => p.includes(secret)), `no ended task holds ${secret}`)
    }
    assert.ok(payloads.every((p) => !/adminPass/.test(p)), payloads.join('\n'))
  })
})
