/**
 * The real `openstack` client (python3-openstackclient) against a fresh server: token issue, catalog list,
 * application credential create and a login with it, token revoke. Each result is checked against the server.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { adminToken, call } from './auth-helpers.js'

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
})
