/**
 * The lockout rules (src/server/identity/lockout.ts) on both databases, with a clock the test moves: counting,
 * exemption, a lock running out and starting a new count, failures of concurrent attempts all counted, and a
 * success refused when concurrent failures locked the account while its factors were checked.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Lockout, isLocked, lockoutPolicy } from '../../src/server/identity/lockout.js'
import { DIALECTS } from '../../src/testkit/harness.js'
import { openTestStore, type TestStore } from '../../src/testkit/store.js'
import { id } from './auth-helpers.js'

const ATTEMPTS = 3
const DURATION_MS = 60_000

for (const dialect of DIALECTS) {
  describe(`lockout rules (${dialect})`, () => {
    let t: TestStore
    let now = 1_700_000_000_000
    let lockout: Lockout
    before(async () => {
      t = await openTestStore(dialect)
      await t.store.db.insertInto('domains').values({ id: 'd', name: 'D', description: '', enabled: 1, options: '{}', extra: '{}', created_at: now }).onConflict((oc) => oc.doNothing()).execute()
      lockout = new Lockout(t.store.db, { attempts: ATTEMPTS, durationMs: DURATION_MS }, () => now)
    })
    after(() => t?.close())

    const newUser = async (options: Record<string, unknown> = {}) => {
      const userId = id()
      await t.store.db
        .insertInto('users')
        .values({
          id: userId, domain_id: 'd', name: userId, enabled: 1, default_project_id: null, description: '', email: null, options: JSON.stringify(options), extra: '{}',
          password_hash: null, password_created_at: null, password_expires_at: null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
        })
        .execute()
      return userId
    }
    const row = (userId: string) => t.store.db.selectFrom('users').select(['failed_auth_count', 'failed_auth_at']).where('id', '=', userId).executeTakeFirstOrThrow()
    const right = async () => true
    const wrong = async () => false

    it('counts wrong factors, locks at N without checking the factor, and a right factor alone resets nothing', async () => {
      const userId = await newUser()
      for (let i = 0; i < ATTEMPTS - 1; i++) assert.equal(await lockout.tryFactor(userId, wrong), 'wrong')
      assert.equal(await lockout.tryFactor(userId, right), 'right')
      assert.deepEqual(await row(userId), { failed_auth_count: ATTEMPTS - 1, failed_auth_at: now })
      assert.equal(await lockout.tryFactor(userId, wrong), 'wrong')
      let checked = false
      assert.equal(await lockout.tryFactor(userId, async () => (checked = true)), 'locked')
      assert.equal(checked, false, 'a locked account does not even check the factor')
      assert.equal((await row(userId)).failed_auth_count, ATTEMPTS, 'refusals are not counted')
      assert.equal(await lockout.loginSucceeded(userId), 'locked')
    })

    it('lets a lock run out, and the next failure starts a new count', async () => {
      const userId = await newUser()
      for (let i = 0; i < ATTEMPTS; i++) await lockout.tryFactor(userId, wrong)
      now += DURATION_MS - 1
      assert.equal(await lockout.locked(userId), true)
      now += 1
      assert.equal(await lockout.locked(userId), false)
      assert.equal(await lockout.tryFactor(userId, wrong), 'wrong')
      assert.deepEqual(await row(userId), { failed_auth_count: 1, failed_auth_at: now })
      assert.equal(await lockout.loginSucceeded(userId), 'ok')
      assert.deepEqual(await row(userId), { failed_auth_count: 0, failed_auth_at: null })
    })

    it('counts every failure of concurrent attempts', async () => {
      const userId = await newUser()
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => lockout.tryFactor(userId, wrong)))
      assert.ok(outcomes.every((o) => o === 'wrong' || o === 'locked'))
      assert.equal((await row(userId)).failed_auth_count, outcomes.filter((o) => o === 'wrong').length)
    })

    it('refuses a success when concurrent failures locked the account while its factors were checked', async () => {
      const userId = await newUser()
      const outcome = await lockout.tryFactor(userId, async () => {
        // Other attempts of the same burst fail meanwhile.
        for (let i = 0; i < ATTEMPTS; i++) await lockout.tryFactor(userId, wrong)
        return true
      })
      assert.equal(outcome, 'right')
      assert.equal(await lockout.loginSucceeded(userId), 'locked')
      assert.equal((await row(userId)).failed_auth_count, ATTEMPTS)
    })

    it('exempts users with ignore_lockout_failure_attempts, and locks nobody when attempts are off', async () => {
      const exempt = await newUser({ ignore_lockout_failure_attempts: true })
      for (let i = 0; i < ATTEMPTS + 1; i++) assert.equal(await lockout.tryFactor(exempt, wrong), 'wrong')
      assert.equal(await lockout.tryFactor(exempt, right), 'right')
      assert.equal(await lockout.loginSucceeded(exempt), 'ok')
      const off = new Lockout(t.store.db, lockoutPolicy({ lockoutFailureAttempts: 0, lockoutDurationSeconds: 60 }), () => now)
      const userId = await newUser()
      for (let i = 0; i < ATTEMPTS + 1; i++) assert.equal(await off.tryFactor(userId, wrong), 'wrong')
      assert.equal((await row(userId)).failed_auth_count, ATTEMPTS + 1)
    })

    it('without a duration, a lock lasts until an admin resets it', () => {
      const user = { options: '{}', failed_auth_count: ATTEMPTS, failed_auth_at: now }
      assert.equal(isLocked({ attempts: ATTEMPTS }, user, now + 365 * 86_400_000), true)
      assert.equal(isLocked({ attempts: ATTEMPTS, durationMs: DURATION_MS }, user, now + DURATION_MS), false)
      assert.equal(isLocked({}, user, now), false)
    })
  })
}
