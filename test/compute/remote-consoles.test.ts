/**
 * The remote-console API as Nova has it: POST /servers/{id}/remote-consoles (2.6+) with every protocol and type
 * Nova's schema knows, the legacy os-get*Console actions (2.1–2.5), GET /os-console-auth-tokens/{token}
 * (admins, 2.31+), policy, another project's server, state checks, and the tokens (hashed in the store, usable
 * until they expire, gone with the server). A server on a simulated host; a "qemu" host is that host with its
 * driver column changed, which is all the API looks at before a websocket connects.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'
import { until } from '../../src/testkit/compute-api.js'

const post = (tb: ComputeTestbed, id: string, protocol: string, type: string, version = '2.96', who = tb.member) =>
  call(tb, who, 'POST', `/servers/${id}/remote-consoles`, { remote_console: { protocol, type } }, version)

describe('remote consoles API', () => {
  let tb: ComputeTestbed
  let id: string
  let hostId: string
  const setDriver = (driver: string) => tb.server.deps.store.db.updateTable('hosts').set({ driver }).where('id', '=', hostId).execute()

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('con'), '2.96')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    id = created.body.server.id
    await until('the server ACTIVE', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server.status === 'ACTIVE' ? true : undefined))
    hostId = (await tb.server.deps.store.db.selectFrom('servers').select('host_id').where('id', '=', id).executeTakeFirstOrThrow()).host_id!
  })
  after(() => tb?.close())

  it('answers serial/serial with a ws:// URL to the proxy, and stores only the token hash with its expiry', async () => {
    const r = await post(tb, id, 'serial', 'serial')
    assert.equal(r.status, 200, JSON.stringify(r.body))
    assert.deepEqual(Object.keys(r.body.remote_console).sort(), ['protocol', 'type', 'url'])
    assert.equal(r.body.remote_console.protocol, 'serial')
    assert.equal(r.body.remote_console.type, 'serial')
    const url = new URL(r.body.remote_console.url)
    const base = new URL(tb.server.deps.urls.base)
    assert.equal(url.protocol, 'ws:')
    assert.equal(url.host, base.host)
    assert.equal(url.pathname, '/console/websocket')
    const token = url.searchParams.get('token')!
    assert.match(token, /^[0-9a-f-]{36}$/)
    const rows = await tb.server.deps.store.db.selectFrom('console_auth_tokens').selectAll().where('server_id', '=', id).execute()
    const row = rows.find((t) => t.token_hash === createHash('sha256').update(token).digest('hex'))
    assert.ok(row, 'the token is found by its SHA-256')
    assert.ok(!JSON.stringify(rows).includes(token), 'the token itself is not stored')
    assert.equal(row.protocol, 'serial')
    assert.ok(Math.abs(row.expires_at - row.created_at - 600_000) < 1000, 'expires after the default 600 s')
  })

  it('answers vnc/novnc with the noVNC page and the websocket path (token inside) on hosts with a display, 501 on simulated ones', async () => {
    const simulated = await post(tb, id, 'vnc', 'novnc')
    assert.equal(simulated.status, 501, JSON.stringify(simulated.body))
    assert.equal(simulated.body.notImplemented.message, 'VNC is not available on simulated hosts.')
    await setDriver('qemu')
    try {
      const r = await post(tb, id, 'vnc', 'novnc')
      assert.equal(r.status, 200, JSON.stringify(r.body))
      const url: string = r.body.remote_console.url
      assert.ok(url.startsWith(`${tb.server.deps.urls.base}/console/vnc.html?path=console/websocket%3Ftoken%3D`), url)
      const path = new URL(url).searchParams.get('path')!
      assert.match(path, /^console\/websocket\?token=[0-9a-f-]{36}$/)
      // Serial consoles are there on those hosts too.
      assert.equal((await post(tb, id, 'serial', 'serial')).status, 200)
    } finally {
      await setDriver('simulated')
    }
  })

  it('answers every other pair as Nova does', async () => {
    const cases: [string, string, string, number, RegExp][] = [
      ['2.96', 'vnc', 'xvpvnc', 400, /^Invalid console type xvpvnc$/],
      ['2.96', 'vnc', 'serial', 400, /^Invalid console type serial$/],
      ['2.96', 'serial', 'novnc', 400, /^Invalid console type novnc$/],
      ['2.96', 'spice', 'spice-html5', 400, /^Unavailable console type spice-html5\.$/],
      ['2.96', 'mks', 'webmks', 400, /^Unavailable console type webmks\.$/],
      ['2.96', 'rdp', 'rdp-html5', 400, /protocol/],
      ['2.96', 'spice', 'spice-direct', 400, /type/],
      ['2.7', 'mks', 'webmks', 400, /protocol/],
      ['2.8', 'mks', 'webmks', 400, /^Unavailable console type webmks\.$/],
    ]
    for (const [version, protocol, type, status, message] of cases) {
      const r = await post(tb, id, protocol, type, version)
      assert.equal(r.status, status, `${version} ${protocol}/${type}: ${JSON.stringify(r.body)}`)
      assert.match(r.body.badRequest.message, message, `${version} ${protocol}/${type}`)
    }
    const bodies = [{}, { remote_console: { protocol: 'serial' } }, { remote_console: { protocol: 'serial', type: 'serial', extra: 1 } }, { remote_console: { protocol: 'serial', type: 'serial' }, more: 1 }, { remote_console: 'serial' }]
    for (const body of bodies) {
      const r = await call(tb, tb.member, 'POST', `/servers/${id}/remote-consoles`, body, '2.96')
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`)
    }
  })

  it('exists from 2.6; the legacy actions answer 2.1–2.5 and are gone from 2.6', async () => {
    assert.equal((await post(tb, id, 'serial', 'serial', '2.5')).status, 404)
    assert.equal((await post(tb, id, 'serial', 'serial', '2.6')).status, 200)
    const action = (body: unknown, version: string) => call(tb, tb.member, 'POST', `/servers/${id}/action`, body, version)
    const serial = await action({ 'os-getSerialConsole': { type: 'serial' } }, '2.1')
    assert.equal(serial.status, 200, JSON.stringify(serial.body))
    assert.deepEqual(Object.keys(serial.body.console).sort(), ['type', 'url'])
    assert.equal(serial.body.console.type, 'serial')
    assert.match(serial.body.console.url, /^ws:\/\/.*\/console\/websocket\?token=[0-9a-f-]{36}$/)
    assert.equal((await action({ 'os-getSerialConsole': { type: 'serial' } }, '2.6')).status, 404)
    assert.equal((await action({ 'os-getVNCConsole': { type: 'novnc' } }, '2.6')).status, 404)
    assert.equal((await action({ 'os-getVNCConsole': { type: 'novnc' } }, '2.5')).status, 501, 'simulated hosts have no display')
    await setDriver('qemu')
    try {
      const vnc = await action({ 'os-getVNCConsole': { type: 'novnc' } }, '2.5')
      assert.equal(vnc.status, 200, JSON.stringify(vnc.body))
      assert.equal(vnc.body.console.type, 'novnc')
      assert.match(vnc.body.console.url, /\/console\/vnc\.html\?path=console\/websocket%3Ftoken%3D[0-9a-f-]{36}$/)
      const xvp = await action({ 'os-getVNCConsole': { type: 'xvpvnc' } }, '2.1')
      assert.equal(xvp.status, 400)
      assert.equal(xvp.body.badRequest.message, 'Invalid console type xvpvnc')
    } finally {
      await setDriver('simulated')
    }
    assert.equal((await action({ 'os-getSPICEConsole': { type: 'spice-html5' } }, '2.1')).body.badRequest.message, 'Unavailable console type spice-html5.')
    assert.equal((await action({ 'os-getVNCConsole': { type: 'serial' } }, '2.1')).status, 400, 'a type outside the action schema')
    assert.equal((await action({ 'os-getSerialConsole': {} }, '2.1')).status, 400, 'type is required')
    assert.equal((await action({ 'os-getRDPConsole': { type: 'rdp-html5' } }, '2.1')).status, 400, 'RDP left Nova')
  })

  it('is for project members and admins: readers 403, another project 404, admins on any server', async () => {
    assert.equal((await post(tb, id, 'serial', 'serial', '2.96', tb.reader)).status, 403)
    assert.equal((await call(tb, tb.reader, 'POST', `/servers/${id}/action`, { 'os-getSerialConsole': { type: 'serial' } }, '2.1')).status, 403)
    assert.equal((await post(tb, id, 'serial', 'serial', '2.96', tb.other)).status, 404)
    assert.equal((await call(tb, tb.other, 'POST', `/servers/${id}/action`, { 'os-getSerialConsole': { type: 'serial' } }, '2.1')).status, 404)
    assert.equal((await post(tb, id, 'serial', 'serial', '2.96', tb.admin)).status, 200)
    assert.equal((await post(tb, '00000000-0000-4000-8000-000000000000', 'serial', 'serial')).status, 404)
    const anon = await fetch(`${tb.compute}/servers/${id}/remote-consoles`, { method: 'POST', headers: { 'content-type': 'application/json', 'openstack-api-version': 'compute 2.96' }, body: JSON.stringify({ remote_console: { protocol: 'serial', type: 'serial' } }) })
    assert.equal(anon.status, 401)
  })

  it('refuses a server without a host and one being deleted or migrated (409)', async () => {
    const db = tb.server.deps.store.db
    const row = await db.selectFrom('servers').select(['host_id', 'host', 'node']).where('id', '=', id).executeTakeFirstOrThrow()
    try {
      await db.updateTable('servers').set({ host_id: null, host: null, node: null }).where('id', '=', id).execute()
      const r = await post(tb, id, 'serial', 'serial')
      assert.equal(r.status, 409)
      assert.equal(r.body.conflictingRequest.message, `Instance ${id} is not ready.`)
      await db.updateTable('servers').set(row).where('id', '=', id).execute()
      for (const task of ['deleting', 'migrating']) {
        await db.updateTable('servers').set({ task_state: task }).where('id', '=', id).execute()
        const busy = await post(tb, id, 'serial', 'serial')
        assert.equal(busy.status, 409, task)
        assert.match(busy.body.conflictingRequest.message, new RegExp(`task_state ${task}`))
      }
    } finally {
      await db.updateTable('servers').set({ ...row, task_state: null }).where('id', '=', id).execute()
    }
  })

  it('shows a token to admins from 2.31 (400 below, 404 unknown or expired, 403 for others)', async () => {
    const url = new URL((await post(tb, id, 'serial', 'serial')).body.remote_console.url)
    const token = url.searchParams.get('token')!
    const show = (version: string, who = tb.admin, t = token) => call(tb, who, 'GET', `/os-console-auth-tokens/${t}`, undefined, version)
    const r = await show('2.31')
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const hostname = (await tb.server.deps.store.db.selectFrom('hosts').select('hostname').where('id', '=', hostId).executeTakeFirstOrThrow()).hostname
    assert.deepEqual(r.body, { console: { instance_uuid: id, host: hostname, port: null, internal_access_path: null } })
    assert.equal((await show('2.30')).status, 400)
    assert.equal((await show('2.30')).body.badRequest.message, 'The requested console type details are not accessible')
    assert.equal((await show('2.96', tb.admin, 'no-such-token')).status, 404)
    assert.equal((await show('2.96', tb.member)).status, 403)
    await tb.server.deps.store.db.updateTable('console_auth_tokens').set({ expires_at: Date.now() - 1 }).where('token_hash', '=', createHash('sha256').update(token).digest('hex')).execute()
    assert.equal((await show('2.96')).status, 404, 'an expired token is not found')
  })

  it('is usable any number of times until it expires, and is gone with its server', async () => {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('short-lived'), '2.96')
    const other = created.body.server.id as string
    await until('ACTIVE', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${other}`, undefined, '2.96')).body.server?.status === 'ACTIVE' ? true : undefined))
    const token = new URL((await post(tb, other, 'serial', 'serial')).body.remote_console.url).searchParams.get('token')!
    for (let i = 0; i < 3; i++) assert.equal((await call(tb, tb.admin, 'GET', `/os-console-auth-tokens/${token}`, undefined, '2.96')).status, 200)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${other}`)).status, 204)
    await until('the server deleted', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${other}`, undefined, '2.96')).status === 404 ? true : undefined))
    assert.equal((await call(tb, tb.admin, 'GET', `/os-console-auth-tokens/${token}`, undefined, '2.96')).status, 404)
    const left = await tb.server.deps.store.db.selectFrom('console_auth_tokens').select('id').where('server_id', '=', other).execute()
    assert.deepEqual(left, [], 'the server delete removed its tokens')
  })
})
