import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { awayFromStepEnd } from '../../src/testkit/totp.js'
import { adminToken, call, createProject, createUser, post, passwordAuth } from './auth-helpers.js'

for (const dialect of DIALECTS) {
  describe(`MFA: TOTP credentials and auth receipts (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let projectId: string
    let userId: string
    const seed = randomBytes(20)
    const blob = base32Encode(seed)
    const passcode = (offsetMs = 0) => totpCode(seed, Date.now() + offsetMs)
    const totpAuth = (code: string) => ({ user: { id: userId, passcode: code } })
    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminToken(server)
      projectId = await createProject(server, 'mfa-project')
      userId = await createUser(server, {
        name: 'mallory',
        password: 'mallory-secret',
        roles: [[projectId, 'member']],
        options: { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] },
      })
    })
    after(() => server?.close())

    it('stores a TOTP credential sealed, shows it to its owner, and lists/updates/deletes it', async () => {
      const created = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: userId, blob } })
      assert.equal(created.status, 201)
      assert.equal(created.body.credential.blob.replace(/=+$/, ''), blob)
      assert.equal(created.body.credential.user_id, userId)
      const row = await server.deps.store.db.selectFrom('credentials').select('blob').where('id', '=', created.body.credential.id).executeTakeFirstOrThrow()
      assert.ok(!row.blob.includes(blob), 'the seed is not stored in clear')
      const list = await call(server, 'GET', `/credentials?user_id=${userId}&type=totp`, { 'x-auth-token': admin })
      assert.equal(list.status, 200)
      assert.equal(list.body.credentials.length, 1)
      assert.equal((await call(server, 'GET', `/credentials/${created.body.credential.id}`, { 'x-auth-token': admin })).status, 200)
      assert.equal((await call(server, 'GET', '/credentials/nope', { 'x-auth-token': admin })).status, 404)
      const bad = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: userId, blob: 'not base32 !' } })
      assert.equal(bad.status, 400)
      const missing = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', blob } })
      assert.equal(missing.status, 400)
      assert.equal((await call(server, 'POST', '/credentials', {}, { credential: { type: 'totp', user_id: userId, blob } })).status, 401)
      const extra = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'ec2', user_id: userId, blob: '{"access":"a","secret":"b"}' } })
      assert.equal(extra.status, 201)
      const patched = await call(server, 'PATCH', `/credentials/${extra.body.credential.id}`, { 'x-auth-token': admin }, { credential: { blob: '{"access":"c"}' } })
      assert.equal(patched.status, 200)
      assert.equal(patched.body.credential.blob, '{"access":"c"}')
      assert.equal((await call(server, 'DELETE', `/credentials/${extra.body.credential.id}`, { 'x-auth-token': admin })).status, 204)
      assert.equal((await call(server, 'DELETE', `/credentials/${extra.body.credential.id}`, { 'x-auth-token': admin })).status, 404)
    })

    it('answers a partial login with 401, an Openstack-Auth-Receipt header and a receipt body; the receipt plus totp completes it', async () => {
      const first = await post(server, passwordAuth({ id: userId, password: 'mallory-secret' }, { project: { id: projectId } }))
      assert.equal(first.status, 401)
      const receipt = first.headers.get('openstack-auth-receipt')
      assert.ok(receipt)
      assert.equal(first.headers.get('www-authenticate'), null)
      assert.equal(first.token, null)
      assert.deepEqual(first.body.receipt.methods, ['password'])
      assert.equal(first.body.receipt.user.id, userId)
      assert.equal(first.body.receipt.user.domain.id, 'default')
      assert.match(first.body.receipt.expires_at, /\.000000Z$/)
      assert.deepEqual(first.body.required_auth_methods, [['password', 'totp']])
      assert.equal(first.body.error, undefined)

      const second = await post(server, { auth: { identity: { methods: ['totp'], totp: totpAuth(passcode()) }, scope: { project: { id: projectId } } } }, { headers: { 'openstack-auth-receipt': receipt! } })
      assert.equal(second.status, 201)
      assert.deepEqual([...second.body.token.methods].sort(), ['password', 'totp'])
      assert.equal(second.body.token.project.id, projectId)

      // A wrong passcode with the receipt: an ordinary 401 error, no new receipt.
      const wrong = await post(server, { auth: { identity: { methods: ['totp'], totp: totpAuth(passcode() === '000000' ? '111111' : '000000') } } }, { headers: { 'openstack-auth-receipt': receipt! } })
      assert.equal(wrong.status, 401)
      assert.equal(wrong.body.error.code, 401)
      assert.equal(wrong.headers.get('openstack-auth-receipt'), null)
      // A garbage receipt: 401.
      const garbage = await post(server, { auth: { identity: { methods: ['totp'], totp: totpAuth(passcode()) } } }, { headers: { 'openstack-auth-receipt': 'garbage' } })
      assert.equal(garbage.status, 401)
      assert.equal(garbage.body.error.code, 401)
      // The receipt belongs to its user: another user's method with it is refused.
      const other = await createUser(server, { name: 'other-user', password: 'other-secret' })
      const mismatch = await post(server, { auth: { identity: { methods: ['password'], password: { user: { id: other, password: 'other-secret' } } } } }, { headers: { 'openstack-auth-receipt': receipt! } })
      assert.equal(mismatch.status, 401)
      assert.equal(mismatch.token, null)
      // A receipt is not a token.
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': receipt! })).status, 404)
    })

    /** A user of its own whose rules need password and TOTP, with a TOTP credential: for tests that use up codes. */
    const mfaUser = async (name: string) => {
      const seed = randomBytes(20)
      const password = `${name}-secret`
      const id = await createUser(server, { name, password, roles: [[projectId, 'member']], options: { multi_factor_auth_rules: [['password', 'totp']] } })
      const created = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: id, blob: base32Encode(seed) } })
      assert.equal(created.status, 201)
      return {
        id,
        code: (offsetMs = 0) => totpCode(seed, Date.now() + offsetMs),
        login: (code: string) =>
          post(server, { auth: { identity: { methods: ['password', 'totp'], password: { user: { id, password } }, totp: { user: { id, passcode: code } } }, scope: { project: { id: projectId } } } }),
        receipt: async () => (await post(server, passwordAuth({ id, password }))).headers.get('openstack-auth-receipt')!,
      }
    }

    it('accepts password and totp in one request, and the previous 30 s step, but not the next one', async () => {
      const user = await mfaUser('window')
      await awayFromStepEnd()
      const next = user.code(30_000)
      if (next !== user.code() && next !== user.code(-30_000)) {
        const r = await user.login(next)
        assert.equal(r.status, 401)
        assert.equal(r.headers.get('openstack-auth-receipt'), null)
      }
      const both = await user.login(user.code(-30_000))
      assert.equal(both.status, 201)
      assert.deepEqual(both.body.token.methods, ['password', 'totp'])
      // Rescoping a fully authenticated token needs no factor again.
      const rescoped = await post(server, { auth: { identity: { methods: ['token'], token: { id: both.token } }, scope: 'unscoped' } })
      assert.equal(rescoped.status, 201)
    })

    it('accepts a code once (RFC 6238 §5.2): the same code again is refused, and so is an older step once a newer one was used', async () => {
      const user = await mfaUser('replayed')
      await awayFromStepEnd()
      const [previous, current] = [user.code(-30_000), user.code()]
      assert.equal((await user.login(previous)).status, 201)
      const replayed = await user.login(previous)
      assert.equal(replayed.status, 401, 'the same code again')
      assert.equal(replayed.body.error.message, 'The request you have made requires authentication.')
      assert.equal(replayed.headers.get('openstack-auth-receipt'), null)
      assert.equal((await user.login(current)).status, 201, "the current step's code is still new")
      assert.equal((await user.login(previous)).status, 401, 'an older step than the last one used')
      assert.equal((await user.login(current)).status, 401)
      const withReceipt = await post(server, { auth: { identity: { methods: ['totp'], totp: { user: { id: user.id, passcode: current } } } } }, { headers: { 'openstack-auth-receipt': await user.receipt() } })
      assert.equal(withReceipt.status, 401, 'with a receipt too')
      assert.equal(withReceipt.token, null)
    })

    it('of several logins sending the same right code at once, exactly one gets a token', async () => {
      const user = await mfaUser('raced')
      await awayFromStepEnd()
      const code = user.code()
      const answers = await Promise.all([1, 2, 3, 4].map(() => user.login(code)))
      assert.deepEqual(answers.map((a) => a.status).sort(), [201, 401, 401, 401])
    })

    it('lets a user exempted with multi_factor_auth_enabled=false in with the password alone', async () => {
      const free = await createUser(server, { name: 'exempt', password: 'exempt-secret', options: { multi_factor_auth_enabled: false, multi_factor_auth_rules: [['password', 'totp']] } })
      assert.equal((await post(server, passwordAuth({ id: free, password: 'exempt-secret' }))).status, 201)
      // Rules naming only unknown methods are dropped (anti-lockout).
      const odd = await createUser(server, { name: 'odd', password: 'odd-secret', options: { multi_factor_auth_rules: [['kerberos']] } })
      assert.equal((await post(server, passwordAuth({ id: odd, password: 'odd-secret' }))).status, 201)
    })
  })
}
