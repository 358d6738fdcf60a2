/* eslint-disable @typescript-eslint/no-explicit-any -- JSON response bodies, checked field by field */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, call, createProject, createUser, post, passwordAuth } from './auth-helpers.js'

for (const dialect of DIALECTS) {
  describe(`application credentials (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let projectId: string
    let userId: string
    let userToken: string

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminToken(server)
      projectId = await createProject(server, 'automation')
      userId = await createUser(server, { name: 'robot-owner', password: 'owner-secret', roles: [[projectId, 'member']] })
      userToken = (await post(server, passwordAuth({ id: userId, password: 'owner-secret' }, { project: { id: projectId } }))).token!
    })
    after(() => server?.close())

    const path = () => `/users/${userId}/application_credentials`

    it('creates one (secret shown once, stored hashed), lists, shows, and refuses duplicates and foreign roles', async () => {
      const created = await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'ci', description: 'for CI', roles: [{ name: 'reader' }] } })
      assert.equal(created.status, 201)
      const cred = created.body.application_credential
      assert.ok(cred.secret.length >= 32)
      assert.equal(cred.project_id, projectId)
      assert.deepEqual(cred.roles.map((r: any) => r.name), ['reader'])
      assert.equal(cred.unrestricted, false)
      const row = await server.deps.store.db.selectFrom('application_credentials').select('secret_hash').where('id', '=', cred.id).executeTakeFirstOrThrow()
      assert.ok(!row.secret_hash.includes(cred.secret))

      const list = await call(server, 'GET', path(), { 'x-auth-token': userToken })
      assert.equal(list.status, 200)
      assert.deepEqual(list.body.application_credentials.map((c: any) => c.name), ['ci'])
      assert.equal(list.body.application_credentials[0].secret, undefined)
      assert.equal((await call(server, 'GET', `${path()}?name=ci`, { 'x-auth-token': userToken })).body.application_credentials.length, 1)
      assert.equal((await call(server, 'GET', `${path()}?name=other`, { 'x-auth-token': userToken })).body.application_credentials.length, 0)
      const shown = await call(server, 'GET', `${path()}/${cred.id}`, { 'x-auth-token': userToken })
      assert.equal(shown.status, 200)
      assert.equal(shown.body.application_credential.secret, undefined)
      assert.equal((await call(server, 'GET', `${path()}/nope`, { 'x-auth-token': userToken })).status, 404)

      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'ci' } })).status, 409)
      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'x', roles: [{ name: 'admin' }] } })).status, 403)
      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: {} })).status, 400)
      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'y', expires_at: '2001-01-01T00:00:00' } })).status, 400)
      // Only the user itself creates its credentials; an admin reads them.
      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': admin }, { application_credential: { name: 'z' } })).status, 403)
      assert.equal((await call(server, 'GET', path(), { 'x-auth-token': admin })).status, 200)
      assert.equal((await call(server, 'GET', path())).status, 401)
    })

    it('logs in with id+secret and with name+user, scoped to its project with its roles only; no scope allowed', async () => {
      const created = await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'login', secret: 'my-own-secret', roles: [{ name: 'reader' }] } })
      const credId = created.body.application_credential.id
      const byId = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: credId, secret: 'my-own-secret' } } } })
      assert.equal(byId.status, 201)
      assert.equal(byId.body.token.project.id, projectId)
      assert.deepEqual(byId.body.token.roles.map((r: any) => r.name), ['reader'])
      assert.deepEqual(byId.body.token.application_credential, { id: credId, name: 'login', restricted: true })
      assert.deepEqual(byId.body.token.methods, ['application_credential'])
      const byName = await post(server, {
        auth: { identity: { methods: ['application_credential'], application_credential: { name: 'login', secret: 'my-own-secret', user: { name: 'robot-owner', domain: { id: 'default' } } } } },
      })
      assert.equal(byName.status, 201)
      const wrong = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: credId, secret: 'nope' } } } })
      assert.equal(wrong.status, 401)
      const scoped = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: credId, secret: 'my-own-secret' } }, scope: { project: { id: projectId } } } })
      assert.equal(scoped.status, 401)
      // Its token cannot be rescoped, nor create credentials (restricted).
      const rescope = await post(server, { auth: { identity: { methods: ['token'], token: { id: byId.token } }, scope: { project: { id: projectId } } } })
      assert.equal(rescope.status, 403)
      assert.equal((await call(server, 'POST', path(), { 'x-auth-token': byId.token! }, { application_credential: { name: 'nested' } })).status, 403)

      // Deleting it ends its tokens.
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': byId.token! })).status, 200)
      assert.equal((await call(server, 'DELETE', `${path()}/${credId}`, { 'x-auth-token': userToken })).status, 204)
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': byId.token! })).status, 404)
      assert.equal((await call(server, 'DELETE', `${path()}/${credId}`, { 'x-auth-token': userToken })).status, 404)
      assert.equal((await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: credId, secret: 'my-own-secret' } } } })).status, 401)
    })

    it('lets an unrestricted credential create and delete credentials with its token', async () => {
      const created = await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'free', secret: 'free-secret', unrestricted: true } })
      assert.equal(created.status, 201)
      assert.equal(created.body.application_credential.unrestricted, true)
      // Without roles named, it delegates every role the token holds.
      assert.deepEqual(created.body.application_credential.roles.map((r: any) => r.name).sort(), ['member', 'reader'])
      const login = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: created.body.application_credential.id, secret: 'free-secret' } } } })
      assert.equal(login.status, 201)
      assert.equal(login.body.token.application_credential.restricted, false)
      const nested = await call(server, 'POST', path(), { 'x-auth-token': login.token! }, { application_credential: { name: 'nested-ok' } })
      assert.equal(nested.status, 201)
      assert.equal((await call(server, 'DELETE', `${path()}/${nested.body.application_credential.id}`, { 'x-auth-token': login.token! })).status, 204)
    })

    it('clips token expiry to the credential expiry and refuses an expired credential', async () => {
      // Room for two scrypt operations on a loaded machine before it expires.
      const soon = new Date(Date.now() + 5000).toISOString()
      const created = await call(server, 'POST', path(), { 'x-auth-token': userToken }, { application_credential: { name: 'short', secret: 'short-secret', expires_at: soon } })
      assert.equal(created.status, 201)
      const login = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: created.body.application_credential.id, secret: 'short-secret' } } } })
      assert.equal(login.status, 201)
      assert.ok(Date.parse(login.body.token.expires_at) <= Date.parse(soon))
      await new Promise((r) => setTimeout(r, Date.parse(soon) + 300 - Date.now()))
      const late = await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: created.body.application_credential.id, secret: 'short-secret' } } } })
      assert.equal(late.status, 401)
    })

    it('deleting a user deletes its application credentials and TOTP credentials; the secret logs in no more', async () => {
      const ownerId = await createUser(server, { name: 'leaving', password: 'leaving-secret', roles: [[projectId, 'member']] })
      const ownerToken = (await post(server, passwordAuth({ id: ownerId, password: 'leaving-secret' }, { project: { id: projectId } }))).token!
      const app = await call(server, 'POST', `/users/${ownerId}/application_credentials`, { 'x-auth-token': ownerToken }, { application_credential: { name: 'bot', secret: 'bot-secret' } })
      assert.equal(app.status, 201)
      const totp = await call(server, 'POST', '/credentials', { 'x-auth-token': admin }, { credential: { type: 'totp', user_id: ownerId, blob: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' } })
      assert.equal(totp.status, 201)
      const appLogin = { auth: { identity: { methods: ['application_credential'], application_credential: { id: app.body.application_credential.id, secret: 'bot-secret' } } } }
      assert.equal((await post(server, appLogin)).status, 201)

      assert.equal((await call(server, 'DELETE', `/users/${ownerId}`, { 'x-auth-token': admin })).status, 204)
      const db = server.deps.store.db
      assert.equal((await db.selectFrom('application_credentials').select('id').where('user_id', '=', ownerId).execute()).length, 0)
      assert.equal((await db.selectFrom('credentials').select('id').where('user_id', '=', ownerId).execute()).length, 0)
      assert.equal((await call(server, 'GET', `/credentials/${totp.body.credential.id}`, { 'x-auth-token': admin })).status, 404)
      assert.equal((await post(server, appLogin)).status, 401)
    })
  })
}
