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

test('a query parameter given twice counts once, its last value, outside the server lists', async () => {
  const tb = await computeTestbed()
  try {
    // Each was a 500 (a handler got an array where it reads a string); found by the fuzz suite.
    const cases: [string, string][] = [
      ['/limits?tenant_id=a&tenant_id=b', '2.1'],
      ['/flavors?is_public=true&is_public=false', '2.96'],
      ['/flavors/detail?minRam=1&minRam=2&sort_key=name&sort_key=id', '2.96'],
      ['/os-keypairs?limit=1&limit=2', '2.96'],
      ['/os-server-groups?limit=1&limit=2&offset=0&offset=0', '2.96'],
      ['/os-simple-tenant-usage?start=2026-01-01T00:00:00&start=2026-01-02T00:00:00', '2.96'],
      ['/os-hypervisors?limit=1&limit=2', '2.96'],
    ]
    for (const [path, version] of cases) {
      const r = await call(tb, tb.admin, 'GET', path, undefined, version)
      assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`)
    }
    // The server lists still read a repeated filter as a list.
    const listed = await call(tb, tb.admin, 'GET', '/servers/detail?vm_state=active&vm_state=error', undefined, '2.96')
    assert.equal(listed.status, 200)
  } finally {
    await tb.close()
  }
})
