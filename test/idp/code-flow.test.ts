/**
 * The authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636, OpenID Connect Core §3.1) over HTTPS, driven
 * by a real OIDC client library (openid-client) for the good path, and by raw requests for every refusal: each
 * gets its RFC error in the OAuth2 shape and changes nothing. The login pages are driven here without a browser
 * (forms and cookies); browser-login.test.ts drives them with Chromium.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { atHash } from '../../src/server/oidc/claims.js'
import { DIALECTS } from '../../src/testkit/harness.js'
import { authorizeUrl, completeLogin, FormBrowser, formPost, kubeApiserverAuthenticate, pkce, registerClient, reqOf, startHttpsPcc, type HttpsPcc } from './flows.js'
import { adminToken, createUser, FULL_SCOPE } from './helpers.js'

const ALICE = { username: 'alice@example.com', password: 'alice-password-1' }

for (const dialect of DIALECTS) {
  describe(`IdP authorization code flow with PKCE (${dialect})`, () => {
    let pcc: HttpsPcc
    let secret: string
    let admin: string
    const redirectUri = 'http://127.0.0.1:38123/'

    before(async () => {
      pcc = await startHttpsPcc(dialect)
      admin = await adminToken(pcc.server)
      secret = ((await (await pcc.fetch(`${pcc.base}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': admin } })).json()) as Record<string, string>).kubernetes
      await createUser(pcc.server, { name: 'alice', email: ALICE.username, password: ALICE.password, role: 'member' })
    })
    after(() => pcc?.server.close())

    const db = () => pcc.server.deps.store.db
    const counts = async () => ({
      refresh: (await db().selectFrom('idp_refresh_tokens').select('id').execute()).length,
      access: (await db().selectFrom('idp_access_tokens').select('token_hash').execute()).length,
      usedCodes: (await db().selectFrom('idp_auth_codes').select('id').where('used_at', 'is not', null).execute()).length,
      requests: (await db().selectFrom('idp_auth_requests').select('id').execute()).length,
    })

    /** Logs alice in for the kubernetes client; returns the code and what the exchange needs. */
    const newCode = async (options: { clientId?: string; redirect?: string; scope?: string; approve?: boolean } = {}) => {
      const { verifier, challenge } = pkce()
      const redirect = options.redirect ?? redirectUri
      const url = authorizeUrl(pcc.issuer, { response_type: 'code', client_id: options.clientId ?? 'kubernetes', redirect_uri: redirect, scope: options.scope ?? FULL_SCOPE, state: 'st-1', nonce: 'n-1', code_challenge: challenge, code_challenge_method: 'S256' })
      const answer = await completeLogin(new FormBrowser(pcc.fetch), url, { ...ALICE, approve: options.approve })
      assert.equal(answer.status, 303, answer.html)
      const location = new URL(answer.location!)
      return { code: location.searchParams.get('code')!, verifier, location }
    }
    const exchange = (form: Record<string, string>, basic: { id: string; secret: string } = { id: 'kubernetes', secret }) =>
      formPost(pcc, '/token', { grant_type: 'authorization_code', redirect_uri: redirectUri, ...form }, basic)

    it('openid-client logs in with PKCE S256; the ID token passes kube-apiserver\'s checks; userinfo and refresh work', async () => {
      const config = await client.discovery(new URL(pcc.issuer), 'kubernetes', secret, undefined, { [client.customFetch]: pcc.fetch as client.CustomFetch })
      config[client.customFetch] = pcc.fetch as client.CustomFetch
      const server = config.serverMetadata()
      assert.equal(server.authorization_endpoint, `${pcc.issuer}/auth`)
      assert.deepEqual(server.code_challenge_methods_supported, ['S256'])
      assert.equal(server.userinfo_endpoint, `${pcc.issuer}/userinfo`)
      assert.equal(server.device_authorization_endpoint, `${pcc.issuer}/device/code`)

      const verifier = client.randomPKCECodeVerifier()
      const state = client.randomState()
      const nonce = client.randomNonce()
      const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: FULL_SCOPE, state, nonce, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' })
      const answer = await completeLogin(new FormBrowser(pcc.fetch), url.href, ALICE)
      assert.equal(answer.status, 303, 'no consent page for the built-in kubernetes client')
      assert.ok(answer.location!.startsWith(redirectUri), answer.location)
      const callback = new URL(answer.location!)
      assert.equal(callback.searchParams.get('state'), state)
      assert.equal(callback.searchParams.get('iss'), pcc.issuer)

      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })
      const claims = tokens.claims()!
      assert.equal(claims.nonce, nonce)
      assert.equal(claims.c_hash, atHash(callback.searchParams.get('code')!))
      assert.equal(claims.at_hash, atHash(tokens.access_token))
      assert.equal(claims.email_verified, true)
      assert.equal(claims.preferred_username, 'alice')
      assert.ok(claims.auth_time! <= claims.iat && claims.auth_time! > claims.iat - 60, 'auth_time is the login')
      const user = await kubeApiserverAuthenticate(tokens.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })
      assert.equal(user.username, ALICE.username)
      assert.deepEqual(user.groups, ['admin', 'admin:member', 'admin:reader', 'system:authenticated'])

      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
      assert.equal(info.sub, claims.sub)
      assert.equal(info.email, ALICE.username)
      assert.deepEqual(info.groups, ['admin', 'admin:member', 'admin:reader'])

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!)
      assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
      assert.equal(refreshed.claims()!.sub, claims.sub)
      assert.equal(refreshed.claims()!.auth_time, claims.auth_time, 'a refresh keeps the login time (OIDC Core §12.2)')
      assert.equal((await kubeApiserverAuthenticate(refreshed.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })).username, ALICE.username)
    })

    it('refuses a wrong code, a wrong or missing verifier, another redirect URI and another client, and then still takes the right exchange', async () => {
      const grafanaSecret = await registerClient(pcc, admin, { id: 'grafana-a', name: 'Grafana', redirect_uris: ['https://grafana.example/login/generic_oauth'] })
      const { code, verifier } = await newCode()
      const before = await counts()
      const cases: [string, Record<string, string>, string, { id: string; secret: string }?][] = [
        ['unknown code', { code: 'not-a-code', code_verifier: verifier }, 'invalid_grant'],
        ['no code', { code_verifier: verifier }, 'invalid_request'],
        ['wrong verifier', { code, code_verifier: pkce().verifier }, 'invalid_grant'],
        ['no verifier', { code }, 'invalid_grant'],
        ['malformed verifier', { code, code_verifier: 'short' }, 'invalid_request'],
        ['other redirect URI', { code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:38124/' }, 'invalid_grant'],
        ['no redirect URI', { code, code_verifier: verifier, redirect_uri: '' }, 'invalid_request'],
        ['other client', { code, code_verifier: verifier }, 'invalid_grant', { id: 'grafana-a', secret: grafanaSecret! }],
      ]
      for (const [name, form, error, basic] of cases) {
        const res = await exchange(form, basic)
        assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`)
        assert.equal(res.body.error, error, name)
        assert.equal(typeof res.body.error_description, 'string', name)
        assert.equal(res.headers.get('cache-control'), null, `${name}: an error carries no token`)
      }
      const badClient = await exchange({ code, code_verifier: verifier }, { id: 'kubernetes', secret: 'wrong' })
      assert.equal(badClient.status, 401)
      assert.equal(badClient.body.error, 'invalid_client')
      assert.deepEqual(await counts(), before, 'the refusals changed nothing')

      const ok = await exchange({ code, code_verifier: verifier })
      assert.equal(ok.status, 200, JSON.stringify(ok.body))
      assert.equal(ok.headers.get('cache-control'), 'no-store')
      assert.equal(ok.headers.get('pragma'), 'no-cache')
      assert.equal(typeof ok.body.refresh_token, 'string')
    })

    it('refuses a reused code and revokes the tokens its first use issued (RFC 6749 §4.1.2)', async () => {
      const { code, verifier } = await newCode()
      const first = await exchange({ code, code_verifier: verifier })
      assert.equal(first.status, 200)
      const userinfo = (token: string) => pcc.fetch(`${pcc.issuer}/userinfo`, { headers: { authorization: `Bearer ${token}` } })
      assert.equal((await userinfo(first.body.access_token as string)).status, 200)

      const again = await exchange({ code, code_verifier: verifier })
      assert.equal(again.status, 400)
      assert.equal(again.body.error, 'invalid_grant')
      assert.match(again.body.error_description as string, /already used/)
      const revoked = await userinfo(first.body.access_token as string)
      assert.equal(revoked.status, 401)
      assert.match(revoked.headers.get('www-authenticate')!, /error="invalid_token"/)
      const refresh = await formPost(pcc, '/token', { grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string }, { id: 'kubernetes', secret })
      assert.equal(refresh.status, 400)
      assert.equal(refresh.body.error, 'invalid_grant')
    })

    it('refuses an expired code', async () => {
      const { code, verifier } = await newCode()
      await db().updateTable('idp_auth_codes').set({ expires_at: Date.now() - 1 }).where('used_at', 'is', null).execute()
      const res = await exchange({ code, code_verifier: verifier })
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'invalid_grant')
    })

    it('never redirects for an unknown client or an unregistered redirect URI, and redirects every later error with state and iss', async () => {
      const browser = new FormBrowser(pcc.fetch)
      const before = await counts()
      const { challenge } = pkce()
      const good = { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirectUri, scope: 'openid', state: 'xyz', code_challenge: challenge, code_challenge_method: 'S256' }
      for (const [name, params] of [
        ['unknown client', { ...good, client_id: 'nobody' }],
        ['no client', { ...good, client_id: '' }],
        ['unregistered redirect URI', { ...good, redirect_uri: 'https://evil.example/cb' }],
        ['loopback with another path', { ...good, redirect_uri: 'http://127.0.0.1:8000/other' }],
        ['loopback over https', { ...good, redirect_uri: 'https://127.0.0.1:8000/' }],
        ['no redirect URI', { ...good, redirect_uri: '' }],
      ] as [string, Record<string, string>][]) {
        const res = await browser.request(authorizeUrl(pcc.issuer, params))
        assert.equal(res.status, 400, name)
        assert.equal(res.location, undefined, `${name}: no redirect`)
        assert.match(res.headers.get('content-type')!, /text\/html/, name)
        assert.match(res.html, /role="alert"/, name)
      }
      for (const [name, params, error] of [
        ['plain PKCE', { ...good, code_challenge: pkce().verifier, code_challenge_method: 'plain' }, 'invalid_request'],
        ['no method (= plain)', { ...good, code_challenge_method: '' }, 'invalid_request'],
        ['no PKCE', { ...good, code_challenge: '', code_challenge_method: '' }, 'invalid_request'],
        ['no openid', { ...good, scope: 'email' }, 'invalid_scope'],
        ['unknown scope', { ...good, scope: 'openid admin' }, 'invalid_scope'],
        ['implicit', { ...good, response_type: 'token' }, 'unsupported_response_type'],
        ['prompt=none', { ...good, prompt: 'none' }, 'login_required'],
        ['request object', { ...good, request: 'eyJ.x.y' }, 'request_not_supported'],
      ] as [string, Record<string, string>, string][]) {
        const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== ''))
        const res = await browser.request(authorizeUrl(pcc.issuer, clean))
        assert.equal(res.status, 303, name)
        const location = new URL(res.location!)
        assert.equal(`${location.origin}${location.pathname}`, 'http://127.0.0.1:38123/', name)
        assert.equal(location.searchParams.get('error'), error, name)
        assert.ok(location.searchParams.get('error_description'), name)
        assert.equal(location.searchParams.get('state'), 'xyz', name)
        assert.equal(location.searchParams.get('iss'), pcc.issuer, name)
      }
      const repeated = await browser.request(`${authorizeUrl(pcc.issuer, good)}&scope=openid`)
      assert.equal(new URL(repeated.location!).searchParams.get('error'), 'invalid_request')
      assert.deepEqual(await counts(), before, 'no login was started')
    })

    it('accepts the registered loopback URIs with any port (RFC 8252 §7.3), as kubelogin uses them', async () => {
      for (const uri of ['http://localhost:8000', 'http://localhost:18000/', 'http://[::1]:5555/', 'http://127.0.0.1:1/']) {
        const { challenge } = pkce()
        const res = await new FormBrowser(pcc.fetch).request(authorizeUrl(pcc.issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: uri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }))
        assert.equal(res.status, 303, uri)
        assert.match(res.location!, /\/idp\/login\?req=/, uri)
      }
    })

    it('pre-fills the username from login_hint, cut to 255 characters without splitting one', async () => {
      const { challenge } = pkce()
      // UTF-16 unit 255 is the first half of the emoji: a cut there leaves half a character, which no URL can hold.
      const hint = `${'a'.repeat(254)}\u{1F600}tail`
      const browser = new FormBrowser(pcc.fetch)
      const res = await browser.request(authorizeUrl(pcc.issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', login_hint: hint }))
      assert.equal(res.status, 303, res.html.slice(0, 300))
      const page = await browser.request(res.location!)
      assert.equal(page.status, 200, page.html.slice(0, 300))
      assert.ok(page.html.includes(`value="${'a'.repeat(254)}\u{1F600}"`), 'the first 255 characters, the emoji whole')
    })

    it('shows the code on a page for the out-of-band redirect (kubelogin authcode-keyboard)', async () => {
      const { verifier, challenge } = pkce()
      const oob = 'urn:ietf:wg:oauth:2.0:oob'
      const answer = await completeLogin(new FormBrowser(pcc.fetch), authorizeUrl(pcc.issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: oob, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }), ALICE)
      assert.equal(answer.status, 200)
      const code = /id="code" class="code" readonly value="([^"]+)"/.exec(answer.html)![1]
      const res = await exchange({ code, code_verifier: verifier, redirect_uri: oob })
      assert.equal(res.status, 200, JSON.stringify(res.body))
    })

    it('re-asks the password with a clear error, ends the login after too many failures, and answers only the browser that started it', async () => {
      const { challenge } = pkce()
      const url = authorizeUrl(pcc.issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' })
      const browser = new FormBrowser(pcc.fetch)
      const start = await browser.request(url)
      const req = reqOf((await browser.request(start.location!)).html)
      const wrong = await browser.request(`${pcc.issuer}/login`, { req, username: 'alice', password: 'wrong-password' })
      assert.equal(wrong.status, 401)
      assert.match(wrong.html, /role="alert" id="error">Invalid username or password\./)
      assert.match(wrong.html, /value="alice"/, 'the username is kept')
      assert.doesNotMatch(wrong.html, /wrong-password/, 'the password is not echoed')

      // Another browser (no cookie, or another one) cannot use this login, even with the right password.
      const intruder = new FormBrowser(pcc.fetch)
      await intruder.request(url)
      const stolen = await intruder.request(`${pcc.issuer}/login`, { req, username: 'alice', password: ALICE.password })
      assert.equal(stolen.status, 400)
      assert.match(stolen.html, /started in another browser/)
      const row = await db().selectFrom('idp_auth_requests').select(['stage', 'user_id']).where('id', '=', req).executeTakeFirstOrThrow()
      assert.deepEqual(row, { stage: 'login', user_id: null }, 'unchanged')

      for (let i = 0; i < 3; i++) assert.equal((await browser.request(`${pcc.issuer}/login`, { req, username: 'alice', password: 'wrong-password' })).status, 401)
      const last = await browser.request(`${pcc.issuer}/login`, { req, username: 'alice', password: 'wrong-password' })
      assert.equal(last.status, 401)
      assert.match(last.html, /Too many attempts/)
      const after = await browser.request(`${pcc.issuer}/login`, { req, username: 'alice', password: ALICE.password })
      assert.equal(after.status, 400, 'the login ended')
      await db().updateTable('users').set({ failed_auth_count: 0, failed_auth_at: null }).where('name', '=', 'alice').execute()
    })

    it('asks consent for a registered client: deny redirects access_denied, allow gives a code; a public client exchanges without a secret', async () => {
      const uri = 'https://argocd.example/auth/callback'
      const argoSecret = await registerClient(pcc, admin, { id: 'argocd', name: 'Argo CD', redirect_uris: [uri] })
      const denied = await newCode({ clientId: 'argocd', redirect: uri, approve: false })
      assert.equal(denied.location.searchParams.get('error'), 'access_denied')
      assert.equal(denied.location.searchParams.get('state'), 'st-1')
      assert.equal(denied.code, null)

      const allowed = await newCode({ clientId: 'argocd', redirect: uri, scope: 'openid email' })
      const res = await formPost(pcc, '/token', { grant_type: 'authorization_code', code: allowed.code, code_verifier: allowed.verifier, redirect_uri: uri }, { id: 'argocd', secret: argoSecret! })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      const claims = JSON.parse(Buffer.from((res.body.id_token as string).split('.')[1], 'base64url').toString()) as Record<string, unknown>
      assert.equal(claims.aud, 'argocd')
      assert.equal(claims.email, ALICE.username)
      assert.equal(claims.groups, undefined, 'only the scopes asked for')
      assert.equal(res.body.refresh_token, undefined, 'no offline_access, no refresh token')

      const cli = 'http://127.0.0.1/cb'
      assert.equal(await registerClient(pcc, admin, { id: 'my-cli', name: 'My CLI', redirect_uris: [cli], public: true }), undefined)
      const pub = await newCode({ clientId: 'my-cli', redirect: 'http://127.0.0.1:40001/cb' })
      const noSecret = await formPost(pcc, '/token', { grant_type: 'authorization_code', client_id: 'my-cli', code: pub.code, code_verifier: pub.verifier, redirect_uri: 'http://127.0.0.1:40001/cb' })
      assert.equal(noSecret.status, 200, JSON.stringify(noSecret.body))
      const password = await formPost(pcc, '/token', { grant_type: 'password', client_id: 'my-cli', scope: 'openid', username: 'alice', password: ALICE.password })
      assert.equal(password.status, 400)
      assert.equal(password.body.error, 'unauthorized_client')
    })

    it('answers userinfo only with a valid access token (RFC 6750 §3.1)', async () => {
      for (const authorization of [undefined, 'Bearer not-a-token', 'Basic a2V5OnZhbHVl']) {
        const res = await pcc.fetch(`${pcc.issuer}/userinfo`, { method: 'POST', headers: authorization ? { authorization } : {} })
        assert.equal(res.status, 401, authorization)
        assert.match(res.headers.get('www-authenticate')!, /^Bearer/)
        assert.equal(((await res.json()) as { error: string }).error, 'invalid_token')
      }
    })
  })
}
