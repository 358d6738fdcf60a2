/** The password grant for users under multi-factor authentication (TOTP), and the `_TOKEN_` login with an identity token. */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { addTotpCredential, adminToken, createUser, kubernetesSecret, tokenCall, userToken } from './helpers.js'

for (const dialect of DIALECTS) {
  describe(`IdP login with MFA (${dialect})`, () => {
    let server: TestServer
    let clientSecret: string
    let userId: string
    const seed = randomBytes(20)
    before(async () => {
      server = await startTestServer({ dialect })
      clientSecret = await kubernetesSecret(server, await adminToken(server))
      userId = await createUser(server, { name: 'mfa@example.com', password: 'mfa-password-1', role: 'member', options: { multi_factor_auth_enabled: true } })
      await addTotpCredential(server, userId, base32Encode(seed))
    })
    after(() => server.close())

    const login = (form: Record<string, string>) =>
      tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: 'openid offline_access', username: 'mfa@example.com', ...form })

    it('refuses the password alone', async () => {
      const res = await login({ password: 'mfa-password-1' })
      assert.equal(res.status, 400)
      assert.equal(res.body.error, 'invalid_grant')
      assert.match(res.body.error_description as string, /TOTP/)
    })

    it('accepts the code in a totp field or appended to the password', async () => {
      const code = totpCode(seed, Date.now())
      const a = await login({ password: 'mfa-password-1', totp: code })
      assert.equal(a.status, 200, JSON.stringify(a.body))
      assert.equal(typeof a.body.refresh_token, 'string')
      const b = await login({ password: `mfa-password-1${code}` })
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

    it('exempts a user whose multi_factor_auth_enabled is false', async () => {
      await server.deps.store.db.updateTable('users').set({ options: JSON.stringify({ multi_factor_auth_enabled: false, multi_factor_auth_rules: [['password', 'totp']] }) }).where('id', '=', userId).execute()
      try {
        assert.equal((await login({ password: 'mfa-password-1' })).status, 200)
      } finally {
        await server.deps.store.db.updateTable('users').set({ options: JSON.stringify({ multi_factor_auth_enabled: true }) }).where('id', '=', userId).execute()
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
  })
}
