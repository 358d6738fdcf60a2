/** GET /resmgr/v2/idpclients and the admin rotation of a client secret. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, createUser, tokenCall, userToken } from '../idp/helpers.js'

for (const dialect of DIALECTS) {
  describe(`resmgr idpclients (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect })
    })
    after(() => server.close())

    const get = (token?: string) => fetch(`${server.url}/resmgr/v2/idpclients`, { headers: token ? { 'x-auth-token': token } : {} })

    it('returns client_id → secret, including kubernetes, to a valid token', async () => {
      const res = await get(await adminToken(server))
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('cache-control'), 'no-store')
      const body = (await res.json()) as Record<string, string>
      assert.deepEqual(Object.keys(body), ['kubernetes'])
      assert.ok(body.kubernetes.length >= 32)
      const row = await server.deps.store.db.selectFrom('idp_clients').selectAll().where('id', '=', 'kubernetes').executeTakeFirstOrThrow()
      assert.ok(!row.sealed_secret.includes(body.kubernetes), 'stored sealed, not in clear')
    })

    it('answers 401 in the identity error shape for a missing or invalid token', async () => {
      for (const token of [undefined, 'not-a-token']) {
        const res = await get(token)
        assert.equal(res.status, 401)
        const body = (await res.json()) as { error: { code: number; title: string; message: string } }
        assert.equal(body.error.code, 401)
        assert.equal(body.error.title, 'Unauthorized')
      }
    })

    it('serves any user with a role on a project, even with an unscoped token; 403 for a user without any', async () => {
      const member = await createUser(server, { name: 'member-user', password: 'member-password-1', role: 'reader' })
      assert.equal((await get(await userToken(server, member, false))).status, 200)
      assert.equal((await get(await userToken(server, member, true))).status, 200)
      const loner = await createUser(server, { name: 'loner', password: 'loner-password-1' })
      assert.equal((await get(await userToken(server, loner, false))).status, 403)
    })

    it('lets admins rotate a secret; the old one works during the grace period only', async () => {
      const admin = await adminToken(server)
      const old = ((await (await get(admin)).json()) as Record<string, string>).kubernetes
      const member = await createUser(server, { name: 'member-2', password: 'member-password-2', role: 'member' })
      const denied = await fetch(`${server.url}/resmgr/v2/idpclients/kubernetes/rotate`, { method: 'POST', headers: { 'x-auth-token': await userToken(server, member) } })
      assert.equal(denied.status, 403)
      assert.equal(((await (await get(admin)).json()) as Record<string, string>).kubernetes, old, 'a refused rotation changes nothing')

      const res = await fetch(`${server.url}/resmgr/v2/idpclients/kubernetes/rotate`, { method: 'POST', headers: { 'x-auth-token': admin } })
      assert.equal(res.status, 200)
      const body = (await res.json()) as { client_id: string; client_secret: string; previous_secret_valid_until: string }
      assert.equal(body.client_id, 'kubernetes')
      assert.notEqual(body.client_secret, old)
      assert.ok(Date.parse(body.previous_secret_valid_until) > Date.now() + 23 * 3600_000)
      assert.equal(((await (await get(admin)).json()) as Record<string, string>).kubernetes, body.client_secret)

      const login = (secret: string) => tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'admin', password: ADMIN_PASSWORD })
      assert.equal((await login(body.client_secret)).status, 200)
      assert.equal((await login(old)).status, 200, 'old secret within the grace period')
      await server.deps.store.db.updateTable('idp_clients').set({ previous_valid_until: Date.now() - 1 }).where('id', '=', 'kubernetes').execute()
      assert.equal((await login(old)).status, 401, 'old secret after the grace period')

      const missing = await fetch(`${server.url}/resmgr/v2/idpclients/nope/rotate`, { method: 'POST', headers: { 'x-auth-token': admin } })
      assert.equal(missing.status, 404)
    })
  })
}

describe('idpclients bootstrap', () => {
  it('keeps the kubernetes secret across restarts', async () => {
    const first = await startTestServer()
    const token = await adminToken(first)
    const before = ((await (await fetch(`${first.url}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': token } })).json()) as Record<string, string>).kubernetes
    await first.stop()
    const second = await startTestServer({ dataDir: first.dataDir })
    try {
      const after = ((await (await fetch(`${second.url}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': await adminToken(second) } })).json()) as Record<string, string>).kubernetes
      assert.equal(after, before)
    } finally {
      await second.close()
      await first.close()
    }
  })
})
