/**
 * The real `openstack` client (python3-openstackclient) against a fresh server: token issue, catalog list,
 * application credential create and a login with it, token revoke. Each result is checked against the server.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { adminToken, call, createUser, identityWrite, roleId } from './auth-helpers.js'

describe('openstack CLI: tokens, catalog, application credentials', () => {
  let server: TestServer
  let env: Record<string, string>

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
    env = adminEnv(server)
  })
  after(() => server?.close())

  it('token issue returns a token the server validates, for the admin project', async () => {
    const issued = await openstackJson<{ id: string; project_id: string; user_id: string; expires: string }>(['token', 'issue'], env)
    assert.equal(issued.project_id, server.bootstrap.adminProjectId)
    assert.equal(issued.user_id, server.bootstrap.adminUserId)
    assert.match(issued.expires, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/)
    const check = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': issued.id, 'x-subject-token': issued.id })
    assert.equal(check.status, 200)
    assert.equal(check.body.token.project.id, server.bootstrap.adminProjectId)
  })

  it('catalog list shows every service with its endpoints', async () => {
    const catalog = await openstackJson<{ Name: string; Type: string; Endpoints: unknown }[]>(['catalog', 'list'], env)
    const types = catalog.map((c) => c.Type).sort()
    for (const type of ['compute', 'identity', 'image', 'network', 'volumev3']) assert.ok(types.includes(type), type)
    const identity = catalog.find((c) => c.Type === 'identity')!
    assert.ok(JSON.stringify(identity.Endpoints).includes(`${server.url}/identity/v3`))
  })

  it('application credential create, then a login with it (v3applicationcredential)', async () => {
    const created = await openstackJson<{ id: string; secret: string; project_id: string; name: string }>(['application', 'credential', 'create', 'cli-cred'], env)
    assert.equal(created.name, 'cli-cred')
    assert.equal(created.project_id, server.bootstrap.adminProjectId)
    assert.ok(created.secret)
    const credEnv = {
      OS_AUTH_URL: env.OS_AUTH_URL,
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_APPLICATION_CREDENTIAL_ID: created.id,
      OS_APPLICATION_CREDENTIAL_SECRET: created.secret,
      OS_IDENTITY_API_VERSION: '3',
      OS_INTERFACE: 'public',
      OS_REGION_NAME: 'RegionOne',
    }
    const issued = await openstackJson<{ id: string; project_id: string; user_id: string }>(['token', 'issue'], credEnv)
    assert.equal(issued.project_id, server.bootstrap.adminProjectId)
    assert.equal(issued.user_id, server.bootstrap.adminUserId)
    const admin = await adminToken(server)
    const check = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': issued.id })
    assert.equal(check.status, 200)
    assert.equal(check.body.token.application_credential.id, created.id)
    // A wrong secret fails the client.
    const bad = await openstack(['token', 'issue'], { ...credEnv, OS_APPLICATION_CREDENTIAL_SECRET: 'wrong' })
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /401|authenticat/i)
  })

  it('token revoke ends the token', async () => {
    const issued = await openstackJson<{ id: string }>(['token', 'issue'], env)
    const admin = await adminToken(server)
    assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': issued.id })).status, 200)
    const revoked = await openstack(['token', 'revoke', issued.id], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': issued.id })).status, 404)
  })

  it('a TOTP credential, then MFA logins: password alone is refused, v3multifactor password+totp works', async () => {
    const userId = await createUser(server, { name: 'mfa-cli', password: 'mfa-cli-password', defaultProjectId: server.bootstrap.adminProjectId })
    const member = await roleId(server, 'member')
    await identityWrite(server, async (db) => {
      await db
        .insertInto('role_assignments')
        .values({ actor_type: 'user', actor_id: userId, target_type: 'project', target_id: server.bootstrap.adminProjectId, role_id: member, inherited: 0 })
        .execute()
      await db
        .updateTable('users')
        .set({ options: JSON.stringify({ multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] }) })
        .where('id', '=', userId)
        .execute()
    })
    const seed = randomBytes(20)
    // Created over HTTP: `openstack credential create` first looks the user up through the admin user API.
    const created = await call(server, 'POST', '/credentials', { 'x-auth-token': await adminToken(server) }, { credential: { type: 'totp', user_id: userId, blob: base32Encode(seed) } })
    assert.equal(created.status, 201)
    const userEnv = { ...env, OS_USERNAME: 'mfa-cli', OS_PASSWORD: 'mfa-cli-password' }
    const passwordOnly = await openstack(['token', 'issue'], userEnv)
    assert.notEqual(passwordOnly.code, 0)
    // keystoneauth read the receipt (MissingAuthMethods), not an ordinary 401.
    assert.match(passwordOnly.stderr, /Not all required auth rules were satisfied: \[\['password', 'totp'\]\]/)
    // OS_AUTH_METHODS reaches this keystoneauth as a string, not a list: a clouds.yaml carries the list instead.
    const dir = mkdtempSync(join(tmpdir(), 'pcc-clouds-'))
    const file = join(dir, 'clouds.yaml')
    const cloud = {
      auth_type: 'v3multifactor',
      auth_methods: ['v3password', 'v3totp'],
      auth: {
        auth_url: env.OS_AUTH_URL, username: 'mfa-cli', password: 'mfa-cli-password', passcode: totpCode(seed, Date.now()),
        user_domain_name: 'Default', project_name: 'admin', project_domain_name: 'Default',
      },
      identity_api_version: '3',
      interface: 'public',
      region_name: 'RegionOne',
    }
    writeFileSync(file, JSON.stringify({ clouds: { mfa: cloud } }))
    const mfa = await openstackJson<{ user_id: string; project_id: string }>(['token', 'issue'], { OS_CLIENT_CONFIG_FILE: file, OS_CLOUD: 'mfa' }).finally(() =>
      rmSync(dir, { recursive: true, force: true }),
    )
    assert.equal(mfa.user_id, userId)
    assert.equal(mfa.project_id, server.bootstrap.adminProjectId)
  })
})
