/** The password check's lockout and refusals, and the `groups` rule, against a real store. */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { projectGroups } from '../../src/server/oidc/claims.js'
import { AuthFlow } from '../../src/server/identity/auth-flow.js'
import type { LockoutPolicy } from '../../src/server/identity/lockout.js'
import { checkLogin, type LoginDeps } from '../../src/server/oidc/login.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, createUser, kubernetesSecret, tokenCall } from './helpers.js'

const id = () => randomUUID().replaceAll('-', '')

for (const dialect of DIALECTS) {
  describe(`IdP login checks and groups (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect })
    })
    after(() => server.close())
    /** The IdP's login checks over identity's, with this lockout policy and clock. */
    const loginDeps = (lockout: LockoutPolicy, now: () => number): LoginDeps => ({
      identity: new AuthFlow(server.deps.store, server.deps.box, server.deps.tokens, lockout, now),
      tokens: server.deps.tokens,
    })

    it('locks an account after the configured failures, until the lock expires', async () => {
      const userId = await createUser(server, { name: 'dave', password: 'dave-password-1' })
      let now = Date.now()
      const deps = loginDeps({ attempts: 2, durationMs: 60_000 }, () => now)
      const attempt = (password: string) => checkLogin(deps, { username: 'dave', password })
      await assert.rejects(attempt('bad'), /Invalid username or password/)
      await assert.rejects(attempt('bad'), /Invalid username or password/)
      await assert.rejects(attempt('dave-password-1'), /locked/, 'the right password does not open a locked account')
      now += 61_000
      assert.equal(await attempt('dave-password-1'), userId, 'the lock expired')
      const row = await server.deps.store.db.selectFrom('users').select('failed_auth_count').where('id', '=', userId).executeTakeFirstOrThrow()
      assert.equal(row.failed_auth_count, 0)

      await server.deps.store.db.updateTable('users').set({ options: JSON.stringify({ ignore_lockout_failure_attempts: true }) }).where('id', '=', userId).execute()
      for (let i = 0; i < 3; i++) await assert.rejects(attempt('bad'))
      assert.equal(await attempt('dave-password-1'), userId, 'ignore_lockout_failure_attempts exempts the user')
    })

    it('refuses disabled users, users of a disabled domain and expired passwords', async () => {
      const userId = await createUser(server, { name: 'erin', password: 'erin-password-1' })
      const db = server.deps.store.db
      const deps = loginDeps({}, Date.now)
      const attempt = () => checkLogin(deps, { username: 'erin', password: 'erin-password-1' })
      await db.updateTable('users').set({ enabled: 0 }).where('id', '=', userId).execute()
      await assert.rejects(attempt(), /disabled/)
      await db.updateTable('users').set({ enabled: 1, password_expires_at: Date.now() - 1 }).where('id', '=', userId).execute()
      await assert.rejects(attempt(), /expired/)
      await db.updateTable('users').set({ password_expires_at: null }).where('id', '=', userId).execute()
      assert.equal(await attempt(), userId)
    })

    it('derives groups from identity groups, project roles, group assignments, implied roles and domains', async () => {
      const db = server.deps.store.db
      const now = Date.now()
      const userId = await createUser(server, { name: 'frank', password: 'frank-password-1', role: 'reader' })
      const roles = new Map((await db.selectFrom('roles').select(['id', 'name']).execute()).map((r) => [r.name, r.id]))
      await db.insertInto('domains').values({ id: 'eng', name: 'Eng', description: '', enabled: 1, options: '{}', extra: '{}', created_at: now }).execute()
      const dev = id()
      const off = id()
      await db.insertInto('projects').values([
        { id: dev, domain_id: 'eng', parent_id: 'eng', name: 'dev', description: '', enabled: 1, options: '{}', extra: '{}', created_at: now },
        { id: off, domain_id: 'default', parent_id: 'default', name: 'off', description: '', enabled: 0, options: '{}', extra: '{}', created_at: now },
      ]).execute()
      const group = id()
      await db.insertInto('groups').values({ id: group, domain_id: 'eng', name: 'devs', description: '', created_at: now }).execute()
      await db.insertInto('group_members').values({ group_id: group, user_id: userId }).execute()
      await db.insertInto('role_assignments').values([
        { actor_type: 'group', actor_id: group, target_type: 'project', target_id: dev, role_id: roles.get('member')!, inherited: 0 },
        { actor_type: 'user', actor_id: userId, target_type: 'project', target_id: off, role_id: roles.get('admin')!, inherited: 0 },
      ]).execute()
      assert.deepEqual(await projectGroups(db, userId), ['Eng/dev', 'Eng/dev:member', 'Eng/dev:reader', 'admin', 'admin:reader'])

      // The same through the token endpoint, and refresh narrows scopes but cannot widen them.
      const secret = await kubernetesSecret(server, await adminToken(server))
      const login = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid offline_access groups', username: 'frank', password: 'frank-password-1' })
      assert.equal(login.status, 200)
      const claims = (t: unknown) => JSON.parse(Buffer.from((t as string).split('.')[1], 'base64url').toString())
      // The token adds the user's identity group (Eng/devs) to the project entries.
      assert.deepEqual(claims(login.body.id_token).groups, ['Eng/dev', 'Eng/dev:member', 'Eng/dev:reader', 'Eng/devs', 'admin', 'admin:reader'])
      const wider = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: login.body.refresh_token as string, scope: 'openid groups email' })
      assert.equal(wider.status, 400)
      assert.equal(wider.body.error, 'invalid_request')
      const usedAfterRefusal = await db.selectFrom('idp_refresh_tokens').select('used_at').where('user_id', '=', userId).where('used_at', 'is not', null).execute()
      assert.equal(usedAfterRefusal.length, 0, 'a refused refresh does not rotate the token')
      const narrower = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: login.body.refresh_token as string, scope: 'openid' })
      assert.equal(narrower.status, 200, JSON.stringify(narrower.body))
      assert.equal(claims(narrower.body.id_token).groups, undefined)
      await db.updateTable('idp_refresh_tokens').set({ used_at: Date.now() - 60_000 }).where('user_id', '=', userId).where('used_at', 'is not', null).execute()
      const successor = await tokenCall(server, { grant_type: 'refresh_token', client_id: 'kubernetes', client_secret: secret, refresh_token: narrower.body.refresh_token as string })
      assert.equal(successor.status, 200, 'the successor of the accepted refresh works')
    })
  })
}
