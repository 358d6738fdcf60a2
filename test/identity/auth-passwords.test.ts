import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DEFAULT_COST, needsRehash } from '../../src/server/crypto/passwords.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { createUser, identityWrite, post, passwordAuth } from './auth-helpers.js'

const GENERIC_401 = 'The request you have made requires authentication.'

for (const dialect of DIALECTS) {
  describe(`password security compliance (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_LOCKOUT_FAILURE_ATTEMPTS: '3', PCC_LOCKOUT_DURATION_SECONDS: '2' } })
    })
    after(() => server?.close())

    it('locks a user after N failed passwords for the configured duration, then lets the right password in', async () => {
      const userId = await createUser(server, { name: 'locky', password: 'right-password' })
      for (let i = 0; i < 3; i++) {
        const r = await post(server, passwordAuth({ id: userId, password: 'wrong' }))
        assert.equal(r.status, 401)
        assert.equal(r.body.error.message, GENERIC_401)
      }
      const locked = await post(server, passwordAuth({ id: userId, password: 'right-password' }))
      assert.equal(locked.status, 401)
      const row = await server.deps.store.db.selectFrom('users').select(['failed_auth_count', 'failed_auth_at']).where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(row.failed_auth_count, 3)
      // Keystone's words and until when: the last failure plus the duration, in UTC.
      const until = new Date(Number(row.failed_auth_at) + 2000).toISOString().slice(11, 16)
      assert.equal(locked.body.error.message, `The account is locked for user: ${userId} until ${until} UTC.`)
      await new Promise((r) => setTimeout(r, 2200))
      const ok = await post(server, passwordAuth({ id: userId, password: 'right-password' }))
      assert.equal(ok.status, 201)
      const reset = await server.deps.store.db.selectFrom('users').select(['failed_auth_count']).where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(reset.failed_auth_count, 0, 'a success resets the count')
    })

    it('says how long a lock without a duration lasts, and with no setting locks nobody (as Keystone)', async () => {
      const { Lockout, untilText } = await import('../../src/server/identity/lockout.js')
      assert.equal(untilText(null, Date.now()), 'until an administrator unlocks it')
      assert.equal(untilText(Date.parse('2026-01-02T03:04:30Z'), Date.parse('2026-01-01T00:00:00Z')), 'until 2026-01-02 03:04 UTC')
      const fresh = await startTestServer({ dialect })
      try {
        assert.equal(fresh.deps.config.lockoutFailureAttempts, 0)
        const userId = await createUser(fresh, { name: 'guessed', password: 'right-password' })
        for (let i = 0; i < 8; i++) assert.equal((await post(fresh, passwordAuth({ id: userId, password: 'wrong' }))).status, 401)
        assert.equal((await post(fresh, passwordAuth({ id: userId, password: 'right-password' }))).status, 201, 'remote guesses lock nobody out')
        const forever = new Lockout(fresh.deps.store.db, { attempts: 2 }, () => Date.now())
        assert.equal(await forever.lockedUntil(userId), undefined, 'the success reset the count')
      } finally {
        await fresh.close()
      }
    })

    it('does not lock users with ignore_lockout_failure_attempts', async () => {
      const userId = await createUser(server, { name: 'unlockable', password: 'right-password', options: { ignore_lockout_failure_attempts: true } })
      for (let i = 0; i < 4; i++) await post(server, passwordAuth({ id: userId, password: 'wrong' }))
      assert.equal((await post(server, passwordAuth({ id: userId, password: 'right-password' }))).status, 201)
    })

    it('refuses an expired password unless ignore_password_expiry is set', async () => {
      const expired = await createUser(server, { name: 'old-pw', password: 'old-password', passwordExpiresAt: Date.now() - 1000 })
      const r = await post(server, passwordAuth({ id: expired, password: 'old-password' }))
      assert.equal(r.status, 401)
      assert.match(r.body.error.message, /expired/)
      // The wrong password still gets the generic answer: expiry is only told to who knows the password.
      assert.equal((await post(server, passwordAuth({ id: expired, password: 'nope' }))).body.error.message, GENERIC_401)
      const ignoring = await createUser(server, { name: 'old-pw-ok', password: 'old-password', passwordExpiresAt: Date.now() - 1000, options: { ignore_password_expiry: true } })
      assert.equal((await post(server, passwordAuth({ id: ignoring, password: 'old-password' }))).status, 201)
      const future = await createUser(server, { name: 'new-pw', password: 'new-password', passwordExpiresAt: Date.now() + 86_400_000 })
      const ok = await post(server, passwordAuth({ id: future, password: 'new-password' }))
      assert.equal(ok.status, 201)
      assert.match(ok.body.token.user.password_expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/)
    })

    it('rehashes a password stored at another cost on the next login', async () => {
      const userId = await createUser(server, { name: 'rehash', password: 'some-password' })
      const before = await server.deps.store.db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirstOrThrow()
      assert.ok(needsRehash(before.password_hash!, DEFAULT_COST))
      assert.equal((await post(server, passwordAuth({ id: userId, password: 'some-password' }))).status, 201)
      const afterRow = await server.deps.store.db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(needsRehash(afterRow.password_hash!, DEFAULT_COST), false)
      assert.notEqual(afterRow.password_hash, before.password_hash)
      assert.equal((await post(server, passwordAuth({ id: userId, password: 'some-password' }))).status, 201)
    })

    it('verifyLogin (the IdP\'s) accepts a name or an e-mail in a domain, the e-mail in any case, and counts failures', async () => {
      const userId = await createUser(server, { name: 'oidc-user', password: 'oidc-password' })
      await identityWrite(server, (db) => db.updateTable('users').set({ email: 'Oidc@Example.com' }).where('id', '=', userId).execute())
      const flow = server.deps.identityAuth
      assert.equal(await flow.verifyLogin('oidc-user', { name: 'Default' }, 'oidc-password'), userId)
      assert.equal(await flow.verifyLogin('oidc@example.com', { id: 'default' }, 'oidc-password'), userId)
      assert.equal(await flow.verifyLogin('OIDC@EXAMPLE.COM', { id: 'default' }, 'oidc-password'), userId)
      assert.equal(await flow.findLogin('OIDC-USER', { id: 'default' }), undefined, 'names are exact')
      assert.equal(await flow.findLogin('oidc@example.com', { id: 'elsewhere' }), undefined, 'within the domain only')
      await assert.rejects(flow.verifyLogin('oidc@example.com', { id: 'default' }, 'wrong'), (err: Error & { code?: string }) => err.code === 'unauthorized' && err.message === GENERIC_401)
      await assert.rejects(flow.verifyLogin('nobody@example.com', { id: 'default' }, 'x'), (err: Error & { code?: string }) => err.code === 'unauthorized' && err.message === GENERIC_401)
      const row = await server.deps.store.db.selectFrom('users').select('failed_auth_count').where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(row.failed_auth_count, 1)
      // Two users of the domain with one address, whatever its case: the address names neither.
      const twin = await createUser(server, { name: 'oidc-twin', password: 'oidc-password' })
      await identityWrite(server, (db) => db.updateTable('users').set({ email: 'oidc@example.COM' }).where('id', '=', twin).execute())
      assert.equal(await flow.findLogin('oidc@example.com', { id: 'default' }), undefined)
    })

    it('refuses a user of a disabled domain', async () => {
      await identityWrite(server, (db) =>
        db.insertInto('domains').values({ id: 'closed', name: 'Closed', description: '', enabled: 0, options: '{}', extra: '{}', created_at: Date.now() }).execute(),
      )
      const userId = await createUser(server, { name: 'in-closed', password: 'pw-closed', domainId: 'closed' })
      assert.equal((await post(server, passwordAuth({ id: userId, password: 'pw-closed' }))).status, 401)
    })
  })
}
