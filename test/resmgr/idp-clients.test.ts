/** GET /resmgr/v2/idpclients, the admin registration of further OIDC clients, and the rotation of a client secret. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, createUser, tokenCall, userToken } from '../idp/helpers.js'

/** A client answer, or an error in the identity shape. */
interface ClientAnswer {
  client: { id: string; name: string; redirect_uris: string[]; public: boolean; builtin: boolean; client_secret?: string }
  error: { message: string }
}

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

    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${server.url}/resmgr/v2/idpclients${path}`, { method, headers: { 'x-auth-token': token, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
      return { status: res.status, body: res.status === 204 ? undefined : ((await res.json()) as ClientAnswer) }
    }

    it('lets admins register a client with redirect URIs; the list shows it to admins only', async () => {
      const admin = await adminToken(server)
      const created = await call('POST', '', admin, { client: { id: 'grafana', name: 'Grafana', redirect_uris: ['https://grafana.example/login/generic_oauth'] } })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const c = created.body!.client
      assert.equal(c.id, 'grafana')
      assert.equal(c.name, 'Grafana')
      assert.deepEqual(c.redirect_uris, ['https://grafana.example/login/generic_oauth'])
      assert.equal(c.public, false)
      assert.equal(c.builtin, false)
      assert.ok(c.client_secret!.length >= 32)

      const list = (await (await get(admin)).json()) as Record<string, string>
      assert.deepEqual(Object.keys(list), ['grafana', 'kubernetes'])
      assert.equal(list.grafana, c.client_secret)
      const member = await userToken(server, await createUser(server, { name: 'viewer', password: 'viewer-password-1', role: 'member' }))
      assert.deepEqual(Object.keys((await (await get(member)).json()) as Record<string, string>), ['kubernetes'], 'a registered client\'s secret is for admins')

      const shown = await call('GET', '/grafana', admin)
      assert.equal(shown.status, 200)
      assert.equal(shown.body!.client.client_secret, c.client_secret)
      assert.equal((await call('GET', '/kubernetes', admin)).body!.client.builtin, true)
      assert.deepEqual((await call('GET', '/kubernetes', admin)).body!.client.redirect_uris, ['http://localhost', 'http://127.0.0.1', 'http://[::1]', 'urn:ietf:wg:oauth:2.0:oob'])
      for (const [method, path, body] of [['POST', '', { client: { name: 'x', redirect_uris: ['https://x.example/cb'] } }], ['GET', '/grafana'], ['PATCH', '/grafana', { client: { name: 'y' } }], ['DELETE', '/grafana']] as [string, string, unknown?][]) {
        assert.equal((await call(method, path, member, body)).status, 403, `${method} ${path} by a member`)
      }
      assert.equal((await call('GET', '/nope', admin)).status, 404)
    })

    it('refuses bad clients and redirect URIs with a 400 that changes nothing', async () => {
      const admin = await adminToken(server)
      const before = (await (await get(admin)).json()) as Record<string, string>
      const cases: [string, unknown, number][] = [
        ['no redirect URIs', { client: { name: 'a', redirect_uris: [] } }, 400],
        ['relative URI', { client: { name: 'a', redirect_uris: ['/callback'] } }, 400],
        ['javascript URI', { client: { name: 'a', redirect_uris: ['javascript:alert(1)'] } }, 400],
        ['fragment', { client: { name: 'a', redirect_uris: ['https://a.example/cb#x'] } }, 400],
        ['private scheme without a domain', { client: { name: 'a', redirect_uris: ['myapp:/cb'] } }, 400],
        ['bad id', { client: { id: 'a b', name: 'a', redirect_uris: ['https://a.example/cb'] } }, 400],
        ['empty name', { client: { name: ' ', redirect_uris: ['https://a.example/cb'] } }, 400],
        ['unknown field', { client: { name: 'a', redirect_uris: ['https://a.example/cb'], secret: 'mine' } }, 400],
        ['taken id', { client: { id: 'kubernetes', name: 'a', redirect_uris: ['https://a.example/cb'] } }, 409],
      ]
      for (const [name, body, status] of cases) {
        const res = await call('POST', '', admin, body)
        assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`)
        assert.equal(typeof res.body!.error.message, 'string', name)
      }
      const patched = await call('PATCH', '/kubernetes', admin, { client: { redirect_uris: ['javascript:x'] } })
      assert.equal(patched.status, 400)
      assert.deepEqual((await (await get(admin)).json()) as Record<string, string>, before, 'nothing was registered')
      assert.equal((await call('GET', '/kubernetes', admin)).body!.client.redirect_uris.length, 4, 'nothing was changed')
      assert.ok((await call('POST', '', admin, { client: { name: 'App', redirect_uris: ['com.example.app:/cb'] } })).status === 201, 'a reverse-domain private scheme is fine')
    })

    it('changes, deletes (with what was issued to it) and rotates registered clients; public clients have no secret', async () => {
      const admin = await adminToken(server)
      const created = (await call('POST', '', admin, { client: { id: 'argo', name: 'Argo', redirect_uris: ['https://argo.example/cb'] } })).body!.client
      const changed = await call('PATCH', '/argo', admin, { client: { name: 'Argo CD', redirect_uris: ['https://argo.example/auth/callback', 'http://127.0.0.1/cb'] } })
      assert.equal(changed.status, 200)
      assert.equal(changed.body!.client.name, 'Argo CD')
      assert.deepEqual(changed.body!.client.redirect_uris, ['https://argo.example/auth/callback', 'http://127.0.0.1/cb'])
      assert.equal(changed.body!.client.client_secret, undefined, 'a change does not show the secret')

      const login = await tokenCall(server, { grant_type: 'password', client_id: 'argo', client_secret: created.client_secret!, scope: 'openid offline_access', username: 'admin', password: ADMIN_PASSWORD })
      assert.equal(login.status, 200)
      const db = server.deps.store.db
      assert.equal((await db.selectFrom('idp_refresh_tokens').select('id').where('client_id', '=', 'argo').execute()).length, 1)
      assert.equal((await call('DELETE', '/argo', admin)).status, 204)
      assert.equal((await db.selectFrom('idp_refresh_tokens').select('id').where('client_id', '=', 'argo').execute()).length, 0, 'its refresh tokens are gone')
      assert.equal((await db.selectFrom('idp_access_tokens').select('token_hash').where('client_id', '=', 'argo').execute()).length, 0, 'its access tokens are gone')
      const refused = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'argo', client_secret: created.client_secret!, refresh_token: login.body.refresh_token as string })
      assert.equal(refused.status, 401)
      assert.equal((await call('DELETE', '/argo', admin)).status, 404)
      assert.equal((await call('DELETE', '/kubernetes', admin)).status, 409, 'the built-in client stays')

      const pub = await call('POST', '', admin, { client: { id: 'cli', name: 'CLI', redirect_uris: ['http://127.0.0.1/'], public: true } })
      assert.equal(pub.status, 201)
      assert.equal(pub.body!.client.public, true)
      assert.equal(pub.body!.client.client_secret, undefined)
      assert.equal(((await (await get(admin)).json()) as Record<string, string>).cli, '')
      const rotate = await fetch(`${server.url}/resmgr/v2/idpclients/cli/rotate`, { method: 'POST', headers: { 'x-auth-token': admin } })
      assert.equal(rotate.status, 409)
      await call('DELETE', '/cli', admin)
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
