/**
 * Wrong TOTP codes count towards identity's lockout on the IdP's surfaces too (docs/idp.md, "Multi-factor
 * authentication"): the password grant with the code in the `totp` field or appended to the password, and the
 * login page's code step across several logins. N wrong codes with the right password lock the account; then even
 * the right password and the right code are refused until the lock runs out.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { wrongTotpCodes } from '../../src/testkit/totp.js'
import { authorizeUrl, FormBrowser, pkce, reqOf } from './flows.js'
import { addTotpCredential, adminToken, createUser, kubernetesSecret, tokenCall } from './helpers.js'

const PASSWORD = 'mfa-password-1'
const ATTEMPTS = 3
const LOCK_SECONDS = 2
/** The IdP's words for a lock, then until when ("until 14:05 UTC"). */
const LOCKED = 'The account is locked after too many failed logins, until'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const dialect of DIALECTS) {
  describe(`IdP lockout of the TOTP factor (${dialect})`, () => {
    let server: TestServer
    let clientSecret: string
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_LOCKOUT_FAILURE_ATTEMPTS: String(ATTEMPTS), PCC_LOCKOUT_DURATION_SECONDS: String(LOCK_SECONDS) } })
      clientSecret = await kubernetesSecret(server, await adminToken(server))
    })
    after(() => server?.close())

    const mfaUser = async (name: string) => {
      const seed = randomBytes(20)
      const userId = await createUser(server, { name, password: PASSWORD, role: 'member', options: { multi_factor_auth_rules: [['password', 'totp']] } })
      await addTotpCredential(server, userId, base32Encode(seed))
      return { name, userId, right: () => totpCode(seed, Date.now()), wrong: (n: number) => wrongTotpCodes(seed, n) }
    }
    const grant = (username: string, form: Record<string, string>) =>
      tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: 'openid', username, ...form })
    const failures = async (userId: string) =>
      (await server.deps.store.db.selectFrom('users').select('failed_auth_count').where('id', '=', userId).executeTakeFirstOrThrow()).failed_auth_count

    /** The two ways the password grant carries the code. */
    const WAYS: [string, (password: string, code: string) => Record<string, string>][] = [
      ['in the totp field', (password, code) => ({ password, totp: code })],
      ['appended to the password', (password, code) => ({ password: `${password}${code}` })],
    ]
    for (const [way, form] of WAYS) {
      it(`password grant, code ${way}: N wrong codes lock the account until the lock runs out`, async () => {
        const user = await mfaUser(`grant-${way.split(' ').at(-1)}`)
        for (const code of user.wrong(ATTEMPTS)) {
          const r = await grant(user.name, form(PASSWORD, code))
          assert.equal(r.status, 400)
          assert.equal(r.body.error, 'invalid_grant')
          assert.equal(r.body.error_description, 'Invalid username, password or TOTP code.')
        }
        assert.equal(await failures(user.userId), ATTEMPTS, 'every wrong code counted, the right password reset nothing')
        const refused = await grant(user.name, form(PASSWORD, user.right()))
        assert.equal(refused.status, 400)
        assert.equal(refused.body.error, 'invalid_grant')
        assert.match(String(refused.body.error_description), new RegExp(`^${LOCKED} \\d\\d:\\d\\d UTC\\.$`), 'even the right password and the right code')
        assert.equal(refused.body.id_token, undefined)
        assert.equal(await failures(user.userId), ATTEMPTS)

        await sleep(LOCK_SECONDS * 1000 + 200)
        const ok = await grant(user.name, form(PASSWORD, user.right()))
        assert.equal(ok.status, 200, JSON.stringify(ok.body))
        assert.equal(await failures(user.userId), 0, 'the whole login resets the count')
      })
    }

    it('password grant: a right code after fewer than N wrong ones succeeds and resets the count; the password alone resets nothing', async () => {
      const user = await mfaUser('grant-fewer')
      for (const code of user.wrong(ATTEMPTS - 1)) assert.equal((await grant(user.name, { password: PASSWORD, totp: code })).status, 400)
      const alone = await grant(user.name, { password: PASSWORD })
      assert.match(alone.body.error_description as string, /a TOTP code is required/)
      assert.equal(await failures(user.userId), ATTEMPTS - 1, 'a right password without its code is not a whole login')
      const ok = await grant(user.name, { password: PASSWORD, totp: user.right() })
      assert.equal(ok.status, 200, JSON.stringify(ok.body))
      assert.equal(await failures(user.userId), 0)
    })

    it('login page: wrong codes count across logins, a new login gives no new guesses, and a locked account is refused at both steps', async () => {
      const user = await mfaUser('page-user')
      const issuer = `${server.url}/idp`
      const redirect = 'http://127.0.0.1:38556/'
      /** A new login in a new browser, up to its code page. */
      const newLogin = async () => {
        const browser = new FormBrowser(fetch)
        const start = await browser.request(authorizeUrl(issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirect, scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' }))
        const req = reqOf((await browser.request(start.location!)).html)
        const step = await browser.request(`${issuer}/login`, { req, username: user.name, password: PASSWORD })
        return { browser, req, step, code: (totp: string) => browser.request(`${issuer}/login/totp`, { req, totp }) }
      }

      const [w1, w2, w3] = user.wrong(ATTEMPTS)
      const first = await newLogin()
      assert.match(first.step.html, /<label for="totp">Authentication code<\/label>/)
      for (const code of [w1, w2]) assert.match((await first.code(code)).html, /That code is not valid/)
      assert.equal(await failures(user.userId), 2)

      // The login page ends a login after 5 failures; a new one must not start the count again.
      const second = await newLogin()
      assert.match(second.step.html, /Authentication code/, 'the right password still reaches the code page')
      assert.equal(await failures(user.userId), 2, 'and resets nothing')
      assert.match((await second.code(w3)).html, /That code is not valid/)
      assert.equal(await failures(user.userId), ATTEMPTS)
      const refused = await second.code(user.right())
      assert.equal(refused.status, 401)
      assert.equal(refused.location, undefined, 'no code for the client')
      assert.match(refused.html, new RegExp(`role="alert" id="error">${LOCKED}`))

      const third = await newLogin()
      assert.equal(third.step.status, 401, 'the password step of a new login is refused too')
      assert.match(third.step.html, new RegExp(`role="alert" id="error">${LOCKED}`))
      assert.equal((await server.deps.store.db.selectFrom('idp_auth_codes').select('id').where('user_id', '=', user.userId).execute()).length, 0)

      await sleep(LOCK_SECONDS * 1000 + 200)
      const fourth = await newLogin()
      const ok = await fourth.code(user.right())
      assert.equal(ok.status, 303, ok.html)
      assert.ok(new URL(ok.location!).searchParams.get('code'))
      assert.equal(await failures(user.userId), 0)
    })
  })
}
