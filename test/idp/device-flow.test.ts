/**
 * The device authorization grant (RFC 8628) over HTTPS: openid-client asks for a device code and polls while
 * the user enters the code at {issuer}/device, logs in and approves; the refusals get their RFC 8628 §3.5
 * errors (authorization_pending, slow_down, expired_token, access_denied) and change nothing else.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import { DIALECTS } from '../../src/testkit/harness.js'
import { completeLogin, FormBrowser, formPost, kubeApiserverAuthenticate, registerClient, startHttpsPcc, type HttpsPcc } from './flows.js'
import { adminToken, createUser, FULL_SCOPE } from './helpers.js'

const BOB = { username: 'bob@example.com', password: 'bob-password-1' }
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

for (const dialect of DIALECTS) {
  describe(`IdP device flow (${dialect})`, () => {
    let pcc: HttpsPcc
    let secret: string
    let other: { id: string; secret: string }
    const kubernetes = () => ({ id: 'kubernetes', secret })

    before(async () => {
      pcc = await startHttpsPcc(dialect)
      const admin = await adminToken(pcc.server)
      secret = ((await (await pcc.fetch(`${pcc.base}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': admin } })).json()) as Record<string, string>).kubernetes
      await createUser(pcc.server, { name: 'bob', email: BOB.username, password: BOB.password, role: 'reader' })
      other = { id: 'tv-app', secret: (await registerClient(pcc, admin, { id: 'tv-app', name: 'TV app', redirect_uris: ['https://tv.example/cb'] }))! }
    })
    after(() => pcc?.server.close())

    const db = () => pcc.server.deps.store.db
    const deviceCode = async (scope = FULL_SCOPE) => {
      const res = await formPost(pcc, '/device/code', { scope }, kubernetes())
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body as { device_code: string; user_code: string; verification_uri: string; verification_uri_complete: string; expires_in: number; interval: number }
    }
    const poll = (code: string) => formPost(pcc, '/token', { grant_type: DEVICE_GRANT, device_code: code }, kubernetes())
    /** Lets the next poll come after the interval without waiting for it. */
    const interval = () => db().updateTable('idp_device_requests').set({ last_polled_at: Date.now() - 60_000 }).where('last_polled_at', 'is not', null).execute()
    const approve = (userCode: string, answer = true) =>
      completeLogin(new FormBrowser(pcc.fetch), { url: `${pcc.issuer}/device`, form: { user_code: userCode } }, { ...BOB, approve: answer })

    it('openid-client gets tokens once the user approved on the verification page', async () => {
      const config = await client.discovery(new URL(pcc.issuer), 'kubernetes', secret, undefined, { [client.customFetch]: pcc.fetch as client.CustomFetch })
      config[client.customFetch] = pcc.fetch as client.CustomFetch
      const device = await client.initiateDeviceAuthorization(config, { scope: FULL_SCOPE })
      assert.match(device.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
      assert.equal(device.verification_uri, `${pcc.issuer}/device`)
      assert.equal(device.verification_uri_complete, `${pcc.issuer}/device?user_code=${device.user_code}`)
      assert.equal(device.expires_in, 300)
      assert.equal(device.interval, 5)

      // The user opens verification_uri_complete: the form comes pre-filled.
      const browser = new FormBrowser(pcc.fetch)
      const form = await browser.request(device.verification_uri_complete!)
      assert.equal(form.status, 200)
      assert.match(form.html, new RegExp(`value="${device.user_code}"`))
      // Typed in lower case without the dash: still the same code (RFC 8628 §6.1).
      const done = await completeLogin(browser, { url: `${pcc.issuer}/device`, form: { user_code: device.user_code.replace('-', '').toLowerCase() } }, BOB)
      assert.equal(done.status, 200)
      assert.match(done.html, /Device connected/)

      const tokens = await client.pollDeviceAuthorizationGrant(config, device)
      const user = await kubeApiserverAuthenticate(tokens.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })
      assert.equal(user.username, BOB.username)
      assert.deepEqual(user.groups, ['admin', 'admin:reader', 'system:authenticated'])
      assert.equal(typeof tokens.refresh_token, 'string')
      const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub)
      assert.equal(info.email, BOB.username)
    })

    it('answers authorization_pending, then slow_down for a poll inside the interval (raising it by 5 s), and tokens once approved', async () => {
      const device = await deviceCode()
      const pending = await poll(device.device_code)
      assert.equal(pending.status, 400)
      assert.equal(pending.body.error, 'authorization_pending')
      const fast = await poll(device.device_code)
      assert.equal(fast.status, 400)
      assert.equal(fast.body.error, 'slow_down')
      const row = await db().selectFrom('idp_device_requests').select(['status', 'interval_seconds']).where('status', '=', 'pending').executeTakeFirstOrThrow()
      assert.deepEqual(row, { status: 'pending', interval_seconds: 10 }, 'slow_down only raised the interval')

      assert.match((await approve(device.user_code)).html, /Device connected/)
      const early = await poll(device.device_code)
      assert.equal(early.body.error, 'slow_down', 'the raised interval holds after the approval too')
      await interval()
      const ok = await poll(device.device_code)
      assert.equal(ok.status, 200, JSON.stringify(ok.body))
      assert.equal(ok.headers.get('cache-control'), 'no-store')
      await interval()
      const again = await poll(device.device_code)
      assert.equal(again.status, 400)
      assert.equal(again.body.error, 'invalid_grant', 'the tokens are handed out once')
    })

    it('answers access_denied when the user denies', async () => {
      const device = await deviceCode('openid')
      const page = await approve(device.user_code, false)
      assert.match(page.html, /Request denied/)
      const res = await poll(device.device_code)
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'access_denied')
    })

    it('answers expired_token for an expired device code, whose user code the page no longer takes', async () => {
      const device = await deviceCode('openid')
      await db().updateTable('idp_device_requests').set({ expires_at: Date.now() - 1 }).where('status', '=', 'pending').execute()
      const res = await poll(device.device_code)
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'expired_token')
      const page = await new FormBrowser(pcc.fetch).request(`${pcc.issuer}/device`, { user_code: device.user_code })
      assert.equal(page.status, 400)
      assert.match(page.html, /role="alert" id="error">That code is not valid or has expired/)
      assert.equal((await db().selectFrom('idp_auth_requests').select('id').execute()).length, 0, 'no login started')
    })

    it('refuses unknown device codes, another client, bad client credentials and unknown scopes', async () => {
      const device = await deviceCode('openid')
      const cases: [string, Promise<{ status: number; body: Record<string, unknown> }>, number, string][] = [
        ['unknown device code', poll('nope'), 400, 'invalid_grant'],
        ['another client', formPost(pcc, '/token', { grant_type: DEVICE_GRANT, device_code: device.device_code }, other), 400, 'invalid_grant'],
        ['no device code', formPost(pcc, '/token', { grant_type: DEVICE_GRANT }, kubernetes()), 400, 'invalid_request'],
        ['wrong secret', formPost(pcc, '/token', { grant_type: DEVICE_GRANT, device_code: device.device_code }, { id: 'kubernetes', secret: 'wrong' }), 401, 'invalid_client'],
        ['device code, wrong secret', formPost(pcc, '/device/code', { scope: 'openid' }, { id: 'kubernetes', secret: 'wrong' }), 401, 'invalid_client'],
        ['device code, unknown scope', formPost(pcc, '/device/code', { scope: 'openid root' }, kubernetes()), 400, 'invalid_scope'],
      ]
      for (const [name, call, status, error] of cases) {
        const res = await call
        assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`)
        assert.equal(res.body.error, error, name)
      }
      const row = await db().selectFrom('idp_device_requests').select(['status', 'last_polled_at']).where('client_id', '=', 'kubernetes').where('status', '=', 'pending').where('expires_at', '>', Date.now()).where('last_polled_at', 'is', null).execute()
      assert.equal(row.length, 1, 'the refused polls did not touch the real request')
    })
  })
}
