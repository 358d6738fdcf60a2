/**
 * Users under multi-factor authentication (TOTP): the password grant with the code (a field, or appended to the
 * password), the `_TOKEN_` login with an identity token, and the login page's second step. The IdP asks for a code
 * exactly when Keystone does (identity's rules), and takes each code once, as Keystone does (identity's check).
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { awayFromStepEnd, TotpApp } from '../../src/testkit/totp.js'
import { addTotpCredential, adminToken, createUser, identityWrite, kubernetesSecret, tokenCall, userToken } from './helpers.js'
import { authorizeUrl, FormBrowser, pkce, reqOf } from './flows.js'

const MFA = { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] }

/** Users' options, and what a login with them needs: the password alone, or a TOTP code too (docs/identity.md, "MFA"). */
const AGREEMENT: [string, Record<string, unknown>, 'password' | 'code'][] = [
  ['no options', {}, 'password'],
  ['multi_factor_auth_enabled without rules', { multi_factor_auth_enabled: true }, 'password'],
  ['a rule password + totp', { multi_factor_auth_rules: [['password', 'totp']] }, 'code'],
  ['enabled, with a rule password + totp', MFA, 'code'],
  ['exempt (enabled false) with a rule password + totp', { ...MFA, multi_factor_auth_enabled: false }, 'password'],
  ['a rule of the password alone among others', { multi_factor_auth_rules: [['password'], ['password', 'totp']] }, 'password'],
  ['a rule naming a method this server does not offer', { multi_factor_auth_rules: [['password', 'kerberos']] }, 'password'],
  ['only rules of methods this server does not offer', { multi_factor_auth_rules: [['kerberos']] }, 'password'],
  ['a rule of totp alone', { multi_factor_auth_rules: [['totp']] }, 'code'],
]

for (const dialect of DIALECTS) {
  describe(`IdP login with MFA (${dialect})`, () => {
    let server: TestServer
    let clientSecret: string
    let userId: string
    const seed = randomBytes(20)
    before(async () => {
      server = await startTestServer({ dialect })
      clientSecret = await kubernetesSecret(server, await adminToken(server))
      userId = await createUser(server, { name: 'mfa@example.com', password: 'mfa-password-1', role: 'member', options: MFA })
      await addTotpCredential(server, userId, base32Encode(seed))
    })
    after(() => server.close())

    /** Another user like mfa@example.com, for a test that uses up codes: its codes come from its own authenticator app. */
    const mfaUser = async (name: string, options: Record<string, unknown> = MFA) => {
      const seed = randomBytes(20)
      const id = await createUser(server, { name, password: 'mfa-password-1', role: 'member', options })
      await addTotpCredential(server, id, base32Encode(seed))
      return { id, name, seed, app: new TotpApp(seed) }
    }
    /** Keystone's POST /v3/auth/tokens for a user by id: the password, and the code when one is given. */
    const keystone = (userId: string, code?: string) => {
      const password = { user: { id: userId, password: 'mfa-password-1' } }
      const identity = code ? { methods: ['password', 'totp'], password, totp: { user: { id: userId, passcode: code } } } : { methods: ['password'], password }
      return fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth: { identity } }) })
    }
    /** A login on the login page, past its password step: `code` submits the code step. */
    const loginPage = async (username: string) => {
      const issuer = `${server.url}/idp`
      const browser = new FormBrowser(fetch)
      const start = await browser.request(authorizeUrl(issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: 'http://127.0.0.1:38555/', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' }))
      const req = reqOf((await browser.request(new URL(start.location!, issuer).toString())).html)
      const step = await browser.request(`${issuer}/login`, { req, username, password: 'mfa-password-1' })
      assert.match(step.html, /Authentication code/)
      return { code: (totp: string) => browser.request(`${issuer}/login/totp`, { req, totp }) }
    }
    const login = (form: Record<string, string>, username = 'mfa@example.com') =>
      tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: 'openid offline_access', username, ...form })

    it('asks for a code exactly when Keystone does, so that no identity token gets around it (_TOKEN_)', async () => {
      for (const [i, [label, options, needs]] of AGREEMENT.entries()) {
        const user = await mfaUser(`agreement-${i}`, options)
        const [viaKeystone, viaIdp] = [await keystone(user.id), await login({ password: 'mfa-password-1' }, user.name)]
        if (needs === 'password') {
          assert.equal(viaKeystone.status, 201, `${label}: Keystone issues a token for the password alone`)
          assert.equal(viaIdp.status, 200, `${label}: the IdP too: ${JSON.stringify(viaIdp.body)}`)
          continue
        }
        assert.equal(viaKeystone.status, 401, `${label}: Keystone wants more than the password`)
        assert.ok(viaKeystone.headers.get('openstack-auth-receipt'), `${label}: an auth receipt, not a token`)
        assert.equal(viaIdp.status, 400, `${label}: the IdP wants more than the password`)
        assert.match(viaIdp.body.error_description as string, /a TOTP code is required/, label)
        assert.equal((await keystone(user.id, await user.app.next())).status, 201, `${label}: Keystone with the code`)
        assert.equal((await login({ password: 'mfa-password-1', totp: await user.app.next() }, user.name)).status, 200, `${label}: the IdP with the code`)
      }
    })

    it('refuses the password alone', async () => {
      const res = await login({ password: 'mfa-password-1' })
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'invalid_grant')
      assert.match(res.body.error_description as string, /TOTP/)
    })

    it('accepts the code in a totp field or appended to the password', async () => {
      const { name, app } = await mfaUser('both-ways')
      const a = await login({ password: 'mfa-password-1', totp: await app.next() }, name)
      assert.equal(a.status, 200, JSON.stringify(a.body))
      assert.equal(typeof a.body.refresh_token, 'string')
      const b = await login({ password: `mfa-password-1${await app.next()}` }, name)
      assert.equal(b.status, 200, JSON.stringify(b.body))
      // Refresh needs no second factor: the login had both.
      const r = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: clientSecret, refresh_token: b.body.refresh_token as string })
      assert.equal(r.status, 200)
    })

    it('refuses a wrong code and a wrong password with a right code', async () => {
      const code = totpCode(seed, Date.now())
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0')
      assert.equal((await login({ password: 'mfa-password-1', totp: wrong })).status, 400)
      assert.equal((await login({ password: 'other-password', totp: code })).status, 400)
      assert.equal((await login({ password: `mfa-password-1${wrong}` })).status, 400)
    })

    it("refuses the next step's code, and a code already used (RFC 6238 §5.2), in the totp field, appended and on the login page", async () => {
      const { name, seed, app } = await mfaUser('replays')
      await awayFromStepEnd()
      const next = totpCode(seed, Date.now() + 30_000)
      if (next !== totpCode(seed, Date.now()) && next !== totpCode(seed, Date.now() - 30_000)) {
        const early = await login({ password: 'mfa-password-1', totp: next }, name)
        assert.equal(early.status, 400, 'a code of the next step is not valid yet')
        assert.equal(early.body.error_description, 'Invalid username, password or TOTP code.')
      }
      const code = await app.next()
      assert.equal((await login({ password: 'mfa-password-1', totp: code }, name)).status, 200)
      const forms: Record<string, string>[] = [{ password: 'mfa-password-1', totp: code }, { password: `mfa-password-1${code}` }]
      for (const form of forms) {
        const replayed = await login(form, name)
        assert.equal(replayed.status, 400)
        assert.equal(replayed.body.error, 'invalid_grant')
        assert.equal(replayed.body.error_description, 'Invalid username, password or TOTP code.')
      }
      const page = await loginPage(name)
      const refused = await page.code(code)
      assert.equal(refused.status, 401)
      assert.match(refused.html, /That code is not valid/)
    })

    it('exempts a user whose multi_factor_auth_enabled is false', async () => {
      const setOptions = (options: Record<string, unknown>) =>
        identityWrite(server, (db) => db.updateTable('users').set({ options: JSON.stringify(options) }).where('id', '=', userId).execute())
      await setOptions({ ...MFA, multi_factor_auth_enabled: false })
      try {
        assert.equal((await login({ password: 'mfa-password-1' })).status, 200)
      } finally {
        await setOptions(MFA)
      }
    })

    it('accepts an identity token as the password with username _TOKEN_ (how MFA users log in from a CLI)', async () => {
      const token = await userToken(server, userId)
      const res = await login({ username: '_TOKEN_', password: token })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      const claims = JSON.parse(Buffer.from((res.body.id_token as string).split('.')[1], 'base64url').toString())
      assert.ok(typeof claims.sub === 'string')
      const bad = await login({ username: '_TOKEN_', password: 'not-a-token' })
      assert.equal(bad.status, 400)
      assert.equal(bad.body.error, 'invalid_grant')
    })

    it('asks for the code on a second login page, which cannot be skipped, and ends the login after too many wrong codes', async () => {
      const { verifier, challenge } = pkce()
      const redirect = 'http://127.0.0.1:38555/'
      const issuer = `${server.url}/idp`
      const browser = new FormBrowser(fetch)
      const start = await browser.request(authorizeUrl(issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirect, scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }))
      const req = reqOf((await browser.request(new URL(start.location!, issuer).toString())).html)
      const second = await browser.request(`${issuer}/login`, { req, username: 'mfa@example.com', password: 'mfa-password-1' })
      assert.equal(second.status, 200)
      assert.match(second.html, /<label for="totp">Authentication code<\/label>/)
      assert.equal(second.location, undefined, 'no code without the second factor')

      // The steps after it refuse a login still waiting for its code.
      assert.equal((await browser.request(`${issuer}/approval`, { req, approval: 'approve' })).status, 400)
      assert.equal((await browser.request(`${issuer}/login`, { req, username: 'mfa@example.com', password: 'mfa-password-1' })).status, 400)
      assert.equal((await server.deps.store.db.selectFrom('idp_auth_codes').select('id').execute()).length, 0)

      const code = totpCode(seed, Date.now())
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0')
      const refused = await browser.request(`${issuer}/login/totp`, { req, totp: wrong })
      assert.equal(refused.status, 401)
      assert.match(refused.html, /role="alert" id="error">That code is not valid/)
      const ok = await browser.request(`${issuer}/login/totp`, { req, totp: totpCode(seed, Date.now()) })
      assert.equal(ok.status, 303, ok.html)
      const landed = new URL(ok.location!)
      assert.equal(landed.searchParams.get('state'), 's')
      const tokens = await tokenCall(server, { grant_type: 'authorization_code', client_id: 'kubernetes', client_secret: clientSecret, code: landed.searchParams.get('code')!, code_verifier: verifier, redirect_uri: redirect })
      assert.equal(tokens.status, 200, JSON.stringify(tokens.body))

      // Five wrong codes end the login.
      const again = new FormBrowser(fetch)
      const restart = await again.request(authorizeUrl(issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirect, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }))
      const req2 = reqOf((await again.request(new URL(restart.location!, issuer).toString())).html)
      await again.request(`${issuer}/login`, { req: req2, username: 'mfa@example.com', password: 'mfa-password-1' })
      for (let i = 0; i < 4; i++) assert.equal((await again.request(`${issuer}/login/totp`, { req: req2, totp: wrong })).status, 401)
      const ended = await again.request(`${issuer}/login/totp`, { req: req2, totp: wrong })
      assert.match(ended.html, /Too many attempts/)
      assert.equal((await again.request(`${issuer}/login/totp`, { req: req2, totp: totpCode(seed, Date.now()) })).status, 400, 'even the right code is too late')
    })
  })
}
