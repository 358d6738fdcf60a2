/** Server actions: state rules (409), lock, success codes and bodies, instance actions and enqueued tasks. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ACTIVE, IMAGE, call, computeTestbed, createBody, setState, unlimited, type ComputeTestbed } from './helpers.js'
import { COMPUTE_TASK_KINDS } from '../../src/server/compute/tasks.js'

async function newServer(tb: ComputeTestbed, state: Record<string, unknown> = ACTIVE): Promise<string> {
  const r = await call(tb, tb.member, 'POST', '/servers', createBody('act'), '2.96')
  assert.equal(r.status, 202)
  await setState(tb, r.body.server.id, state)
  return r.body.server.id
}

async function row(tb: ComputeTestbed, id: string) {
  return tb.server.deps.store.db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
}

async function lastTask(tb: ComputeTestbed, id: string) {
  const tasks = await tb.server.deps.store.db.selectFrom('tasks').selectAll().where('subject_id', '=', id).orderBy('created_at', 'desc').execute()
  return tasks.map((t) => ({ kind: t.kind, payload: JSON.parse(t.payload) }))
}

test('each accepted action sets its task_state, records the instance action and enqueues the task', async () => {
  const tb = await computeTestbed()
  await unlimited(tb, tb.member.projectId)
  try {
    const cases: [string, unknown, Record<string, unknown>, number, string | null, string][] = [
      ['reboot', { type: 'SOFT' }, ACTIVE, 202, 'rebooting', 'REBOOT'],
      ['reboot', { type: 'hard' }, { ...ACTIVE, vm_state: 'stopped', power_state: 4 }, 202, 'rebooting_hard', 'SHUTOFF'],
      ['os-stop', null, ACTIVE, 202, 'powering-off', 'ACTIVE'],
      ['os-start', null, { ...ACTIVE, vm_state: 'stopped', power_state: 4 }, 202, 'powering-on', 'SHUTOFF'],
      ['pause', null, ACTIVE, 202, 'pausing', 'ACTIVE'],
      ['unpause', null, { ...ACTIVE, vm_state: 'paused', power_state: 3 }, 202, 'unpausing', 'PAUSED'],
      ['suspend', null, ACTIVE, 202, 'suspending', 'ACTIVE'],
      ['resume', null, { ...ACTIVE, vm_state: 'suspended', power_state: 7 }, 202, 'resuming', 'SUSPENDED'],
      ['shelve', null, ACTIVE, 202, 'shelving', 'ACTIVE'],
      ['unshelve', null, { ...ACTIVE, vm_state: 'shelved_offloaded', host: null }, 202, 'unshelving', 'SHELVED_OFFLOADED'],
      ['resize', { flavorRef: '2' }, ACTIVE, 202, 'resize_prep', 'RESIZE'],
      ['confirmResize', null, { ...ACTIVE, vm_state: 'resized' }, 204, 'resize_confirming', 'VERIFY_RESIZE'],
      ['revertResize', null, { ...ACTIVE, vm_state: 'resized' }, 202, 'resize_reverting', 'REVERT_RESIZE'],
      ['changePassword', { adminPass: 'secret' }, ACTIVE, 202, 'updating_password', 'PASSWORD'],
      ['unrescue', null, { ...ACTIVE, vm_state: 'rescued' }, 202, 'unrescuing', 'RESCUE'],
      ['restore', null, { ...ACTIVE, vm_state: 'soft-delete' }, 202, 'restoring', 'SOFT_DELETED'],
    ]
    for (const [action, value, state, code, task, status] of cases) {
      const id = await newServer(tb, state)
      const r = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { [action]: value }, '2.96')
      assert.equal(r.status, code, `${action}: ${JSON.stringify(r.body)}`)
      assert.equal(r.body, undefined, `${action} answers an empty body`)
      const after = await row(tb, id)
      assert.equal(after.task_state, task, action)
      const shown = (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
      assert.equal(shown.status, status, `${action} status`)
      const actions = await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions`, undefined, '2.96')
      assert.equal(actions.body.instanceActions[0].request_id, r.headers.get('x-compute-request-id'), action)
      const [t] = await lastTask(tb, id)
      assert.equal(t.kind, COMPUTE_TASK_KINDS.action)
      assert.equal(t.payload.requestId, r.headers.get('x-compute-request-id'))
      assert.equal(t.payload.before.vmState, state.vm_state)
    }
  } finally {
    await tb.close()
  }
})

test('actions refused from the wrong state (409 conflictingRequest), on locked servers, and unknown ones', async () => {
  const tb = await computeTestbed()
  await unlimited(tb, tb.member.projectId)
  try {
    const building = await newServer(tb, {})
    for (const [action, value] of [['reboot', { type: 'SOFT' }], ['os-stop', null], ['pause', null], ['resize', { flavorRef: '2' }], ['createImage', { name: 'i' }]] as const) {
      const r = await call(tb, tb.member, 'POST', `/servers/${building}/action`, { [action]: value }, '2.96')
      assert.equal(r.status, 409, action)
      assert.match(r.body.conflictingRequest.message, /while it is in vm_state building/)
    }
    const active = await newServer(tb)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { 'os-start': null })).status, 409)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { unpause: null })).status, 409)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { confirmResize: null })).status, 409)
    const busy = await newServer(tb, { ...ACTIVE, task_state: 'pausing' })
    const soft = await call(tb, tb.member, 'POST', `/servers/${busy}/action`, { reboot: { type: 'SOFT' } })
    assert.match(soft.body.conflictingRequest.message, /task_state pausing/)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${busy}/action`, { reboot: { type: 'HARD' } })).status, 202, 'HARD reboot is accepted while pausing')

    // Lock: members are refused, admins override; owner cannot unlock an admin lock.
    const locked = await newServer(tb)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${locked}/action`, { lock: { locked_reason: 'maintenance' } }, '2.73')).status, 202)
    const shown = (await call(tb, tb.member, 'GET', `/servers/${locked}`, undefined, '2.73')).body.server
    assert.equal(shown.locked, true)
    assert.equal(shown.locked_reason, 'maintenance')
    const refused = await call(tb, tb.member, 'POST', `/servers/${locked}/action`, { 'os-stop': null })
    assert.equal(refused.status, 409)
    assert.match(refused.body.conflictingRequest.message, /is locked/)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${locked}`)).status, 409)
    assert.equal((await call(tb, tb.member, 'PUT', `/servers/${locked}`, { server: { name: 'still' } })).status, 200, 'PUT ignores the lock')
    assert.equal((await call(tb, tb.admin, 'POST', `/servers/${locked}/action`, { 'os-stop': null })).status, 202, 'admins override the lock')
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${locked}/action`, { unlock: null })).status, 202)
    const adminLocked = await newServer(tb)
    await call(tb, tb.admin, 'POST', `/servers/${adminLocked}/action`, { lock: null })
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${adminLocked}/action`, { unlock: null })).status, 403)
    const lockAt272 = await call(tb, tb.member, 'POST', `/servers/${active}/action`, { lock: { locked_reason: 'x' } }, '2.72')
    assert.equal(lockAt272.status, 202, 'below 2.73 the lock value is ignored')
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { unlock: null })).status, 202)

    // Malformed bodies.
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { fly: null })).body.badRequest.message, 'There is no such action: fly')
    // A key every object inherits names no action either (it reached the validator as one, a 500).
    for (const key of ['constructor', 'toString']) {
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { [key]: {} })).body.badRequest.message, `There is no such action: ${key}`)
    }
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { pause: null, unpause: null })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, {})).status, 400)
    const badReboot = await call(tb, tb.member, 'POST', `/servers/${active}/action`, { reboot: { type: 'GENTLE' } })
    assert.equal(badReboot.status, 400)
    assert.match(badReboot.body.badRequest.message, /type/)
    const badResize = await call(tb, tb.member, 'POST', `/servers/${active}/action`, { resize: { flavorRef: '1' } })
    assert.equal(badResize.status, 400, 'same flavor')
    assert.match(badResize.body.badRequest.message, /must change flavor/)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { resize: { flavorRef: '404' } })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { resize: {} })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { createImage: { metadata: {} } })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { changePassword: { adminPass: 5 } })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { rebuild: { imageRef: 'x' } })).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { rebuild: { imageRef: IMAGE, key_name: null } }, '2.53')).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { trigger_crash_dump: null }, '2.16')).status, 404)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { trigger_crash_dump: {} }, '2.17')).status, 400)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { trigger_crash_dump: null }, '2.17')).status, 202)
    assert.equal((await row(tb, active)).task_state, null, 'refused actions changed nothing')
    // Admin-only actions.
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { migrate: null })).status, 403)
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${active}/action`, { evacuate: {} }, '2.96')).status, 403)
    // Another project's server is 404.
    assert.equal((await call(tb, tb.other, 'POST', `/servers/${active}/action`, { pause: null })).status, 404)
  } finally {
    await tb.close()
  }
})

test('createImage, rescue, rebuild and console answers', async () => {
  const tb = await computeTestbed()
  await unlimited(tb, tb.member.projectId)
  try {
    const a = await newServer(tb)
    const old = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { createImage: { name: 'snap' } }, '2.44')
    assert.equal(old.status, 202)
    assert.match(old.headers.get('location') ?? '', /\/image\/v2\/images\/[0-9a-f-]{36}$/)
    assert.equal(old.body, undefined)
    await setState(tb, a, ACTIVE)
    const now = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { createImage: { name: 'snap', metadata: { k: 'v' } } }, '2.45')
    assert.equal(now.status, 202)
    assert.match(now.body.image_id, /^[0-9a-f-]{36}$/)
    assert.equal(now.headers.get('location'), null)

    await setState(tb, a, ACTIVE)
    const rescue = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { rescue: null })
    assert.equal(rescue.status, 200)
    assert.equal(typeof rescue.body.adminPass, 'string')

    await setState(tb, a, ACTIVE)
    const rebuild = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { rebuild: { imageRef: IMAGE, name: 'rebuilt', metadata: { a: 'b' } } }, '2.74')
    assert.equal(rebuild.status, 202)
    assert.equal(rebuild.body.server.name, 'rebuilt')
    assert.equal(rebuild.body.server.status, 'REBUILD')
    assert.ok(rebuild.body.server.adminPass)
    assert.ok(!('OS-EXT-STS:vm_state' in rebuild.body.server), 'reduced body below 2.75')
    assert.ok('key_name' in rebuild.body.server && 'user_data' in rebuild.body.server)
    await setState(tb, a, ACTIVE)
    const rebuild75 = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { rebuild: { imageRef: IMAGE, user_data: 'QQ==' } }, '2.75')
    assert.ok('OS-EXT-STS:vm_state' in rebuild75.body.server)
    assert.equal(rebuild75.body.server.user_data, 'QQ==')

    await setState(tb, a, ACTIVE)
    const console = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { 'os-getConsoleOutput': { length: 10 } })
    assert.equal(console.status, 404, 'a seeded row has no guest on any hypervisor, so no console')
    const noHost = await newServer(tb, { ...ACTIVE, host: null })
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${noHost}/action`, { 'os-getConsoleOutput': {} })).status, 409)

    // Security groups live on the server's ports (server-networks.test.ts): a server booted with networks
    // "none" has no group to show or change (Nova's 404), and an unknown group is 404 too.
    const sg = await call(tb, tb.member, 'POST', `/servers/${a}/action`, { addSecurityGroup: { name: 'default' } })
    assert.equal(sg.status, 404)
    assert.match(sg.body.itemNotFound.message, /could not be found as device id on any ports/)
    assert.ok(!('security_groups' in (await call(tb, tb.member, 'GET', `/servers/${a}`)).body.server))
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${a}/action`, { removeSecurityGroup: { name: 'nope' } })).status, 404)
  } finally {
    await tb.close()
  }
})

test('delete: 204, task_state deleting, delete task; repeat is a no-op; instance action events shown', async () => {
  const tb = await computeTestbed()
  await unlimited(tb, tb.member.projectId)
  try {
    const id = await newServer(tb)
    const del = await call(tb, tb.member, 'DELETE', `/servers/${id}`)
    assert.equal(del.status, 204)
    assert.equal((await row(tb, id)).task_state, 'deleting')
    assert.equal((await lastTask(tb, id))[0].kind, COMPUTE_TASK_KINDS.delete)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}`)).status, 204)
    assert.equal((await lastTask(tb, id)).filter((t) => t.kind === COMPUTE_TASK_KINDS.delete).length, 1)
    assert.equal((await call(tb, tb.other, 'DELETE', `/servers/${id}`)).status, 404)

    const db = tb.server.deps.store.db
    const create = await db.selectFrom('instance_actions').selectAll().where('server_id', '=', id).where('action', '=', 'create').executeTakeFirstOrThrow()
    await db.insertInto('instance_action_events').values({ id: 'e1', action_id: create.id, event: 'compute__do_build_and_run_instance', start_time: Date.now(), finish_time: Date.now(), result: 'Success', traceback: null, host: 'sim-1', details: null }).execute()
    const asMember50 = await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions/${create.request_id}`, undefined, '2.50')
    assert.ok(!('events' in asMember50.body.instanceAction), 'owners see events from 2.51')
    const asMember = await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions/${create.request_id}`, undefined, '2.96')
    assert.equal(asMember.body.instanceAction.events[0].event, 'compute__do_build_and_run_instance')
    assert.ok(!('host' in asMember.body.instanceAction.events[0]))
    assert.ok('hostId' in asMember.body.instanceAction.events[0])
    const asAdmin = await call(tb, tb.admin, 'GET', `/servers/${id}/os-instance-actions/${create.request_id}`, undefined, '2.96')
    assert.equal(asAdmin.body.instanceAction.events[0].host, 'sim-1')
    const list = await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions?limit=1`, undefined, '2.96')
    assert.equal(list.body.instanceActions.length, 1)
    assert.equal(list.body.instanceActions[0].action, 'delete')
    assert.ok(list.body.links[0].href.includes('marker='))
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions?marker=nope`, undefined, '2.96')).status, 400)
  } finally {
    await tb.close()
  }
})
