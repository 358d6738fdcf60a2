/**
 * Wrong TOTP passcodes count towards the lockout like wrong passwords (docs/identity.md, "Passwords and lockout"):
 * someone who knows a user's password must not be able to guess the second factor, neither by sending the password
 * with a guessed code in every request (whose right password used to reset the count) nor through auth receipts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { wrongTotpCodes } from '../../src/testkit/totp.js'
import { adminToken, call, createUser, passwordAuth, post, sleep } from './auth-helpers.js'

const GENERIC_401 = 'The request you have made requires authentication.'
const PASSWORD = 'right-password'
const ATTEMPTS = 3
const LOCK_SECONDS = 2

for (const dialect of DIALECTS) {
  describe(`lockout of the TOTP factor (${dialect})`, () => {
    let server: TestServer
    let admin: string
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_LOCKOUT_FAILURE_ATTEMPTS: String(ATTEMPTS), PCC_LOCKOUT_DURATION_SECONDS: String(LOCK_SECONDS) } })
      admin = await adminToken(server)
    })
    after(() => server?.close())

    /** A user whose rules need password and TOTP, with a TOTP credential. */
    const mfaUser = async (name: string) => {
      const seed = randomBytes(20)
      const userId = await createUser(server, { name, password: PASSWORD, options: { multi_factor_auth_rules: [['password', 'totp']] } })
      const created = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: userId, blob: base32Encode(seed) } })
      assert.equal(created.status, 201)
      return { userId, right: () => totpCode(seed, Date.now()), wrong: (n: number) => wrongTotpCodes(seed, n) }
    }
    const totp = (userId: string, passcode: string) => ({ user: { id: userId, passcode } })
    const both = (userId: string, passcode: string, password = PASSWORD) =>
      post(server, { auth: { identity: { methods: ['password', 'totp'], password: { user: { id: userId, password } }, totp: totp(userId, passcode) } } })
    const withReceipt = (receipt: string, userId: string, passcode: string) =>
      post(server, { auth: { identity: { methods: ['totp'], totp: totp(userId, passcode) } } }, { headers: { 'openstack-auth-receipt': receipt } })
    const failures = async (userId: string) =>
      (await server.deps.store.db.selectFrom('users').select('failed_auth_count').where('id', '=', userId).executeTakeFirstOrThrow()).failed_auth_count
    const lockedMessage = (userId: string) => new RegExp(`^The account is locked for user: ${userId} until \\d\\d:\\d\\d UTC\\.$`)

    it('password + totp in one request: N wrong codes with the right password lock the account until the lock runs out', async () => {
      const user = await mfaUser('guessed-in-one')
      for (const code of user.wrong(ATTEMPTS)) {
        const r = await both(user.userId, code)
        assert.equal(r.status, 401)
        assert.equal(r.body.error.message, GENERIC_401)
        assert.equal(r.headers.get('openstack-auth-receipt'), null)
      }
      assert.equal(await failures(user.userId), ATTEMPTS, 'every wrong code counted, the right password reset nothing')
      const refused = await both(user.userId, user.right())
      assert.equal(refused.status, 401)
      assert.match(refused.body.error.message, lockedMessage(user.userId), 'even the right password and the right code')
      assert.equal(refused.token, null)
      const password = await post(server, passwordAuth({ id: user.userId, password: PASSWORD }))
      assert.equal(password.status, 401, 'the same lock as wrong passwords: no receipt either')
      assert.match(password.body.error.message, lockedMessage(user.userId))
      assert.equal(password.headers.get('openstack-auth-receipt'), null)
      assert.equal(await failures(user.userId), ATTEMPTS, 'refused attempts are not counted')

      await sleep(LOCK_SECONDS * 1000 + 200)
      const ok = await both(user.userId, user.right())
      assert.equal(ok.status, 201, JSON.stringify(ok.body))
      assert.equal(await failures(user.userId), 0, 'the whole login resets the count')
    })

    it('a right code after fewer than N wrong ones succeeds and resets the count; the right password alone resets nothing', async () => {
      const user = await mfaUser('guessed-less')
      for (const code of user.wrong(ATTEMPTS - 1)) assert.equal((await both(user.userId, code)).status, 401)
      assert.equal(await failures(user.userId), ATTEMPTS - 1)
      const partial = await post(server, passwordAuth({ id: user.userId, password: PASSWORD }))
      assert.equal(partial.status, 401)
      assert.ok(partial.headers.get('openstack-auth-receipt'), 'a receipt: the password is right')
      assert.equal(await failures(user.userId), ATTEMPTS - 1, 'a receipt is not a whole login')
      const ok = await both(user.userId, user.right())
      assert.equal(ok.status, 201, JSON.stringify(ok.body))
      assert.equal(await failures(user.userId), 0)
    })

    it('auth receipts: wrong codes sent with a receipt count and lock the account, the receipt then completes nothing', async () => {
      const user = await mfaUser('guessed-by-receipt')
      const first = await post(server, passwordAuth({ id: user.userId, password: PASSWORD }))
      const receipt = first.headers.get('openstack-auth-receipt')
      assert.ok(receipt)
      for (const code of user.wrong(ATTEMPTS)) {
        const r = await withReceipt(receipt, user.userId, code)
        assert.equal(r.status, 401)
        assert.equal(r.body.error.message, GENERIC_401)
      }
      assert.equal(await failures(user.userId), ATTEMPTS)
      const refused = await withReceipt(receipt, user.userId, user.right())
      assert.equal(refused.status, 401)
      assert.match(refused.body.error.message, lockedMessage(user.userId))
      assert.equal(refused.token, null)
      const again = await post(server, passwordAuth({ id: user.userId, password: PASSWORD }))
      assert.match(again.body.error?.message ?? '', lockedMessage(user.userId), 'a new receipt is refused too')

      await sleep(LOCK_SECONDS * 1000 + 200)
      const fresh = (await post(server, passwordAuth({ id: user.userId, password: PASSWORD }))).headers.get('openstack-auth-receipt')
      assert.ok(fresh)
      const ok = await withReceipt(fresh, user.userId, user.right())
      assert.equal(ok.status, 201, JSON.stringify(ok.body))
      assert.equal(await failures(user.userId), 0)
    })

    it('self-service password change: no way around the lock, and no reset of the wrong codes of an MFA user', async () => {
      const user = await mfaUser('changes-password')
      const change = (original: string, password: string) => call(server, 'POST', `/users/${user.userId}/password`, {}, { user: { original_password: original, password } })
      const [w1, w2, w3] = user.wrong(ATTEMPTS)
      for (const code of [w1, w2]) assert.equal((await both(user.userId, code)).status, 401)
      assert.equal((await change(PASSWORD, 'second-password')).status, 204)
      assert.equal(await failures(user.userId), 2, 'the original password alone is not a whole login for this user')
      assert.equal((await both(user.userId, w3, 'second-password')).status, 401)
      assert.equal(await failures(user.userId), ATTEMPTS)
      const refused = await change('second-password', 'third-password')
      assert.equal(refused.status, 401)
      assert.match(refused.body.error.message, lockedMessage(user.userId), 'the same answer as a locked password login')
      assert.match((await both(user.userId, user.right(), 'second-password')).body.error.message, lockedMessage(user.userId), 'the password is unchanged')
      assert.equal(await failures(user.userId), ATTEMPTS)
    })

    it('counts a wrong code of a user without MFA rules, and leaves its password login as it was', async () => {
      const seed = randomBytes(20)
      const userId = await createUser(server, { name: 'no-rules', password: PASSWORD })
      assert.equal((await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: userId, blob: base32Encode(seed) } })).status, 201)
      assert.equal((await both(userId, wrongTotpCodes(seed, 1)[0])).status, 401)
      assert.equal(await failures(userId), 1)
      assert.equal((await post(server, passwordAuth({ id: userId, password: PASSWORD }))).status, 201)
      assert.equal(await failures(userId), 0, 'the password is a whole login for this user')
    })
  })
}
