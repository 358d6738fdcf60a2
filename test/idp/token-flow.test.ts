/** The spec's cluster-API flow over real HTTP: identity token → client secret → password grant → verify → refresh. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { atHash } from '../../src/server/oidc/claims.js'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, createUser, FULL_SCOPE, kubernetesSecret, tokenCall } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`IdP token flow (${dialect})`, () => {
    let server: TestServer
    let secret: string
    before(async () => {
      server = await startTestServer({ dialect })
      secret = await kubernetesSecret(server, await adminToken(server))
    })
    after(() => server.close())

    it('logs in with the password grant, verifies against the JWKS from discovery, refreshes', async () => {
      const discovery = (await (await fetch(`${server.url}/idp/.well-known/openid-configuration`)).json()) as Record<string, unknown>
      const issuer = `${server.config.publicUrl}/idp`
      assert.equal(discovery.issuer, issuer)
      assert.equal(discovery.token_endpoint, `${issuer}/token`)
      assert.equal(discovery.jwks_uri, `${issuer}/keys`)
      assert.deepEqual(discovery.id_token_signing_alg_values_supported, ['RS256'])
      assert.deepEqual(discovery.grant_types_supported, ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'password'])
      // The harness's public URL is not where it listens; fetch the keys from the real address.
      const jwks = createRemoteJWKSet(new URL(`${server.url}/idp/keys`))

      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD, connector_id: 'default' })
      assert.equal(login.status, 200, JSON.stringify(login.body))
      assert.equal(login.headers.get('cache-control'), 'no-store')
      assert.equal(login.body.token_type, 'bearer')
      assert.equal(login.body.expires_in, 86399)
      assert.equal(typeof login.body.access_token, 'string')
      assert.equal(typeof login.body.refresh_token, 'string')
      const { payload, protectedHeader } = await jwtVerify(login.body.id_token as string, jwks, { issuer, audience: 'kubernetes', algorithms: ['RS256'] })
      assert.equal(protectedHeader.alg, 'RS256')
      assert.match(protectedHeader.kid!, /^[0-9a-f]{40}$/)
      assert.equal(payload.aud, 'kubernetes')
      assert.equal(payload.exp! - payload.iat!, 86399)
      assert.ok(Math.abs(payload.iat! - Date.now() / 1000) < 60)
      assert.equal(payload.at_hash, atHash(login.body.access_token as string))
      assert.equal(payload.name, 'admin')
      assert.equal(payload.preferred_username, 'admin')
      assert.deepEqual(payload.groups, ['admin', 'admin:admin', 'admin:member', 'admin:reader'])
      assert.equal(typeof payload.sub, 'string')

      // kubectl refreshes with HTTP Basic client authentication and no scope.
      const refreshed = await tokenCall(server, { grant_type: 'refresh_token', refresh_token: login.body.refresh_token as string }, { id: 'kubernetes', secret })
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body))
      assert.notEqual(refreshed.body.refresh_token, login.body.refresh_token)
      assert.notEqual(refreshed.body.id_token, login.body.id_token)
      const again = await jwtVerify(refreshed.body.id_token as string, jwks, { issuer, audience: 'kubernetes' })
      assert.equal(again.payload.sub, payload.sub)
      assert.deepEqual(again.payload.groups, payload.groups)
      assert.equal(again.payload.exp! - again.payload.iat!, refreshed.body.expires_in)
    })

    it('gives no refresh token without offline_access and only the claims of the scopes asked for', async () => {
      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'admin', password: ADMIN_PASSWORD })
      assert.equal(login.status, 200)
      assert.equal(login.body.refresh_token, undefined)
      const claims = JSON.parse(Buffer.from((login.body.id_token as string).split('.')[1], 'base64url').toString())
      assert.equal(claims.groups, undefined)
      assert.equal(claims.name, undefined)
    })

    it('finds users by e-mail (case-insensitive) and puts the e-mail in the token', async () => {
      await createUser(server, { name: 'alice', password: 'alice-password-1', email: 'Alice@Example.com', role: 'member' })
      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'alice@example.com', password: 'alice-password-1' })
      assert.equal(login.status, 200, JSON.stringify(login.body))
      const claims = JSON.parse(Buffer.from((login.body.id_token as string).split('.')[1], 'base64url').toString())
      assert.equal(claims.email, 'Alice@Example.com')
      assert.equal(claims.email_verified, true)
      assert.deepEqual(claims.groups, ['admin', 'admin:member', 'admin:reader'])
    })

    it('answers the negative cases with OAuth2 errors', async () => {
      const base = { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD }
      const cases: [string, Record<string, string>, number, string][] = [
        ['wrong secret', { ...base, client_secret: 'nope' }, 401, 'invalid_client'],
        ['unknown client', { ...base, client_id: 'other' }, 401, 'invalid_client'],
        ['no client', { grant_type: 'password', scope: 'openid', username: 'admin', password: ADMIN_PASSWORD }, 401, 'invalid_client'],
        ['wrong password', { ...base, password: 'wrong-password' }, 400, 'invalid_grant'],
        ['unknown user', { ...base, username: 'nobody' }, 400, 'invalid_grant'],
        ['wrong grant', { ...base, grant_type: 'client_credentials' }, 400, 'unsupported_grant_type'],
        ['no grant', { ...base, grant_type: '' }, 400, 'invalid_request'],
        ['no username', { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', password: 'x' }, 400, 'invalid_request'],
        ['no password', { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'admin' }, 400, 'invalid_request'],
        ['no openid', { ...base, scope: 'email' }, 400, 'invalid_request'],
        ['unknown scope', { ...base, scope: 'openid root' }, 400, 'invalid_request'],
        ['unknown connector', { ...base, connector_id: 'ldap' }, 400, 'invalid_request'],
        ['no refresh token', { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret }, 400, 'invalid_request'],
        ['bad refresh token', { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: 'forged' }, 400, 'invalid_grant'],
      ]
      for (const [name, form, status, error] of cases) {
        const res = await tokenCall(server, form)
        assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`)
        assert.equal(res.body.error, error, name)
        assert.equal(typeof res.body.error_description, 'string', name)
      }
      const basicWrong = await tokenCall(server, { grant_type: 'password', scope: 'openid', username: 'admin', password: ADMIN_PASSWORD }, { id: 'kubernetes', secret: 'nope' })
      assert.equal(basicWrong.status, 401)
      const json = await fetch(`${server.url}/idp/token`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<x/>' })
      assert.equal(json.status, 415)
      assert.equal(((await json.json()) as { error: string }).error, 'invalid_request')
      const get = await fetch(`${server.url}/idp/token`)
      assert.equal(get.status, 405)
    })

    it('rotates refresh tokens: reuse within the window gets the same successor, reuse after it revokes the family', async () => {
      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD })
      const first = login.body.refresh_token as string
      const form = (token: string) => ({ grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: token })
      // Two kubectl processes refreshing at once.
      const [a, b] = await Promise.all([tokenCall(server, form(first)), tokenCall(server, form(first))])
      assert.equal(a.status, 200, JSON.stringify(a.body))
      assert.equal(b.status, 200, JSON.stringify(b.body))
      assert.equal(a.body.refresh_token, b.body.refresh_token)
      const second = a.body.refresh_token as string

      // The window (3 s by default) has passed: the old token is reused by someone who should not have it.
      await server.deps.store.db.updateTable('idp_refresh_tokens').set({ used_at: Date.now() - 10_000 }).where('used_at', 'is not', null).execute()
      const stolen = await tokenCall(server, form(first))
      assert.equal(stolen.status, 400)
      assert.equal(stolen.body.error, 'invalid_grant')
      const victim = await tokenCall(server, form(second))
      assert.equal(victim.status, 400, 'the whole family is revoked')
      assert.equal(victim.body.error, 'invalid_grant')
    })

    it('expires refresh tokens after the idle and the absolute lifetime', async () => {
      const login = () => tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD })
      const form = (token: string) => ({ grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: token })
      const db = server.deps.store.db
      const idle = (await login()).body.refresh_token as string
      await db.updateTable('idp_refresh_tokens').set({ created_at: Date.now() - 2161 * 3600_000 }).where('used_at', 'is', null).where('revoked_at', 'is', null).execute()
      const r1 = await tokenCall(server, form(idle))
      assert.equal(r1.status, 400)
      assert.match(r1.body.error_description as string, /expired/)

      const old = (await login()).body.refresh_token as string
      await db.updateTable('idp_refresh_tokens').set({ family_created_at: Date.now() - 3961 * 3600_000 }).where('used_at', 'is', null).where('revoked_at', 'is', null).execute()
      const r2 = await tokenCall(server, form(old))
      assert.equal(r2.status, 400)
      assert.match(r2.body.error_description as string, /expired/)
    })

    it('ends refresh when the user is disabled or changes its password', async () => {
      const userId = await createUser(server, { name: 'bob', password: 'bob-password-1', role: 'member' })
      const db = server.deps.store.db
      const login = () => tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'bob', password: 'bob-password-1' })
      const form = (token: string) => ({ grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: token })

      const t1 = (await login()).body.refresh_token as string
      await db.updateTable('users').set({ enabled: 0 }).where('id', '=', userId).execute()
      assert.equal((await tokenCall(server, form(t1))).status, 400)
      assert.equal((await login()).status, 400)
      await db.updateTable('users').set({ enabled: 1 }).where('id', '=', userId).execute()
      assert.equal((await tokenCall(server, form(t1))).status, 400, 'a family revoked while disabled stays revoked')

      const t2 = (await login()).body.refresh_token as string
      assert.equal((await tokenCall(server, form(t2))).status, 200)
      const t3 = (await login()).body.refresh_token as string
      await db.updateTable('users').set({ password_created_at: Date.now() + 1 }).where('id', '=', userId).execute()
      const res = await tokenCall(server, form(t3))
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'invalid_grant')
    })

    it('counts failed logins in the users lockout columns and resets them on success', async () => {
      const userId = await createUser(server, { name: 'carol', password: 'carol-password-1' })
      const db = server.deps.store.db
      for (let i = 0; i < 2; i++) {
        assert.equal((await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'carol', password: 'bad' })).status, 400)
      }
      const failed = await db.selectFrom('users').select(['failed_auth_count', 'failed_auth_at']).where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(failed.failed_auth_count, 2)
      assert.ok(failed.failed_auth_at)
      assert.equal((await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'carol', password: 'carol-password-1' })).status, 200)
      const reset = await db.selectFrom('users').select('failed_auth_count').where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(reset.failed_auth_count, 0)
    })

    it('decodes form-encoded HTTP Basic credentials (RFC 6749 2.3.1) and passes the nonce through', async () => {
      const special = 'a+b:c%/ é'
      await server.deps.store.db.insertInto('idp_clients').values({ id: 'odd client', sealed_secret: server.deps.box.seal(special), previous_sealed_secret: null, previous_valid_until: null, created_at: Date.now(), rotated_at: null, name: '', redirect_uris: '[]', public: 0 }).execute()
      const form = { grant_type: 'password', scope: 'openid', username: 'admin', password: ADMIN_PASSWORD, nonce: 'n-123' }
      const res = await tokenCall(server, form, { id: 'odd client', secret: special })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      const claims = JSON.parse(Buffer.from((res.body.id_token as string).split('.')[1], 'base64url').toString())
      assert.equal(claims.aud, 'odd client')
      assert.equal(claims.nonce, 'n-123')
      // Basic wins over form fields.
      const mixed = await tokenCall(server, { ...form, client_id: 'kubernetes', client_secret: secret }, { id: 'odd client', secret: 'wrong' })
      assert.equal(mixed.status, 401)
    })

    it('refuses a refresh token issued to another client', async () => {
      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD })
      await server.deps.store.db.insertInto('idp_clients').values({ id: 'other', sealed_secret: server.deps.box.seal('other-secret'), previous_sealed_secret: null, previous_valid_until: null, created_at: Date.now(), rotated_at: null, name: '', redirect_uris: '[]', public: 0 }).execute()
      const res = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'other', client_secret: 'other-secret', refresh_token: login.body.refresh_token as string })
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'invalid_grant')
      // An earlier signed token: the key that signed it is the one in the JWKS.
      const jwks = (await (await fetch(`${server.url}/idp/keys`)).json()) as { keys: { kid: string }[] }
      assert.ok(jwks.keys.some((k) => k.kid === decodeProtectedHeader(login.body.id_token as string).kid))
    })
  })
}
