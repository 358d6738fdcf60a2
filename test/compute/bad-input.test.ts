/** Update and action bodies: wrong types, too long, out of range, unknown keys → 400 naming the field, nothing changed. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ACTIVE, IMAGE, call, computeTestbed, createBody, setState } from './helpers.js'

test('bad update and action input is a 400 naming the field and changes nothing', async () => {
  const tb = await computeTestbed()
  try {
    const id = (await call(tb, tb.member, 'POST', '/servers', createBody('stable'), '2.96')).body.server.id
    await setState(tb, id, ACTIVE)
    const db = tb.server.deps.store.db
    const snapshot = async () => {
      const row = await db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const actions = await db.selectFrom('instance_actions').select('id').where('server_id', '=', id).execute()
      return JSON.stringify({ ...row, actions: actions.length })
    }
    const before = await snapshot()
    const updates: [unknown, string, string?][] = [
      [{ server: { name: '' } }, 'name'],
      [{ server: { name: 'n'.repeat(256) } }, 'name'],
      [{ server: { name: 42 } }, 'name'],
      [{ server: { description: 'd'.repeat(256) } }, 'description'],
      [{ server: { accessIPv4: '1.2.3.400' } }, 'accessIPv4'],
      [{ server: { accessIPv6: 'not-v6' } }, 'accessIPv6'],
      [{ server: { 'OS-DCF:diskConfig': 'auto' } }, 'OS-DCF:diskConfig'],
      [{ server: { hostname: '-bad-' } }, 'hostname', '2.90'],
      [{ server: { hostname: 'ok' } }, 'hostname', '2.89'],
      [{ server: { colour: 'red' } }, 'colour'],
      [{ server: { name: 'x' }, extra: 1 }, 'extra'],
      [{}, 'server'],
      [{ server: 'x' }, 'server'],
    ]
    for (const [body, field, version] of updates) {
      const r = await call(tb, tb.member, 'PUT', `/servers/${id}`, body, version ?? '2.96')
      assert.equal(r.status, 400, `PUT ${JSON.stringify(body)}`)
      assert.ok(r.body.badRequest.message.includes(field), `PUT names ${field}: ${r.body.badRequest.message}`)
    }
    const actions: [unknown, string, string?][] = [
      [{ reboot: {} }, 'type'],
      [{ reboot: { type: 'SOFT', force: true } }, 'force'],
      [{ resize: { flavorRef: '' } }, 'flavorRef'],
      [{ resize: { flavorRef: '2', 'OS-DCF:diskConfig': 'x' } }, 'OS-DCF:diskConfig'],
      [{ rebuild: {} }, 'imageRef'],
      [{ rebuild: { imageRef: IMAGE, name: '' } }, 'name'],
      [{ rebuild: { imageRef: IMAGE, metadata: { k: 5 } } }, 'k'],
      [{ rebuild: { imageRef: IMAGE, personality: [] } }, 'personality', '2.57'],
      [{ rebuild: { imageRef: IMAGE, user_data: 'not base64!' } }, 'user_data', '2.57'],
      [{ rebuild: { imageRef: IMAGE, description: 'd' } }, 'description', '2.18'],
      [{ createImage: { name: 'n'.repeat(256) } }, 'name'],
      [{ createImage: { name: 'i', metadata: [] } }, 'metadata'],
      [{ changePassword: {} }, 'adminPass'],
      [{ lock: { locked_reason: '' } }, 'locked_reason', '2.73'],
      [{ lock: { locked_reason: 'r'.repeat(256) } }, 'locked_reason', '2.73'],
      [{ lock: { why: 'x' } }, 'why', '2.73'],
      [{ rescue: { rescue_image_ref: 'nope' } }, 'rescue_image_ref'],
      [{ unshelve: { availability_zone: 5 } }, 'availability_zone', '2.77'],
      [{ 'os-getConsoleOutput': { length: 'lots' } }, 'length'],
      [{ 'os-getConsoleOutput': { length: -2 } }, 'length'],
      [{ addSecurityGroup: {} }, 'name'],
      [{ addSecurityGroup: { name: '' } }, 'name'],
      [{ 'os-migrateLive': { host: null } }, 'block_migration', '2.25'],
      [{ trigger_crash_dump: 1 }, 'action:trigger_crash_dump', '2.17'],
    ]
    for (const [body, field, version] of actions) {
      const r = await call(tb, tb.admin, 'POST', `/servers/${id}/action`, body, version ?? '2.96')
      assert.equal(r.status, 400, `action ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`)
      assert.ok(r.body.badRequest.message.includes(field), `action names ${field}: ${r.body.badRequest.message}`)
    }
    assert.equal(await snapshot(), before, 'nothing changed')
  } finally {
    await tb.close()
  }
})
