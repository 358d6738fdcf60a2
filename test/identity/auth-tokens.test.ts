/* eslint-disable @typescript-eslint/no-explicit-any -- JSON response bodies, checked field by field */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { touchIdentity } from '../../src/server/identity/generation.js'
import { adminToken, call, createProject, createUser, identityWrite, passwordAuth, post, roleId } from './auth-helpers.js'

const GENERIC_401 = 'The request you have made requires authentication.'
const KEYSTONE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000000Z$/

for (const dialect of DIALECTS) {
  describe(`identity tokens (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let projectId: string
    let aliceId: string

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminToken(server)
      projectId = await createProject(server, 'alpha')
      aliceId = await createUser(server, { name: 'alice', password: 'alice-secret', roles: [[projectId, 'member']], defaultProjectId: projectId })
    })
    after(() => server?.close())

    it('serves the version documents as Keystone', async () => {
      const root = await fetch(`${server.url}/identity/`)
      assert.equal(root.status, 300)
      const body = (await root.json()) as any
      assert.equal(body.versions.values[0].id, 'v3.14')
      assert.equal(body.versions.values[0].links[0].href, `${server.deps.urls.identity}/`)
      assert.equal(root.headers.get('location'), `${server.deps.urls.identity}/`)
      const v3 = await fetch(`${server.url}/identity/v3`)
      assert.equal(v3.status, 200)
      assert.equal(((await v3.json()) as any).version.status, 'stable')
    })

    it('issues a project-scoped token with every field, id only in X-Subject-Token', async () => {
      const r = await post(server, passwordAuth({ name: 'alice', domain: { name: 'Default' }, password: 'alice-secret' }, { project: { name: 'alpha', domain: { id: 'default' } } }))
      assert.equal(r.status, 201)
      assert.ok(r.token && r.token.length > 60)
      assert.ok(!JSON.stringify(r.body).includes(r.token!), 'the token id is not in the body')
      const t = r.body.token
      assert.deepEqual(t.methods, ['password'])
      assert.equal(t.user.id, aliceId)
      assert.equal(t.user.name, 'alice')
      assert.deepEqual(t.user.domain, { id: 'default', name: 'Default', description: 'The default domain', enabled: true, options: {}, links: t.user.domain.links })
      for (const field of ['description', 'enabled', 'domain_id', 'default_project_id', 'email', 'password_expires_at', 'options', 'links']) assert.ok(field in t.user, field)
      assert.equal(t.audit_ids.length, 1)
      assert.match(t.audit_ids[0], /^[A-Za-z0-9_-]{22}$/)
      assert.match(t.expires_at, KEYSTONE_TIME)
      assert.match(t.issued_at, KEYSTONE_TIME)
      assert.equal(t.project.id, projectId)
      assert.equal(t.project.domain.id, 'default')
      for (const field of ['name', 'description', 'enabled', 'domain_id', 'parent_id', 'is_domain', 'tags', 'options', 'links']) assert.ok(field in t.project, field)
      assert.equal(t.is_domain, false)
      assert.deepEqual(t.roles.map((x: any) => x.name).sort(), ['member', 'reader'])
      for (const field of ['id', 'name', 'description', 'domain_id', 'options', 'links']) assert.ok(field in t.roles[0], field)
      const compute = t.catalog.find((s: any) => s.type === 'compute')
      assert.ok(compute)
      const publicEndpoint = compute.endpoints.find((e: any) => e.interface === 'public')
      assert.equal(publicEndpoint.region_id, 'RegionOne')
      assert.equal(publicEndpoint.region, 'RegionOne')
      assert.equal(publicEndpoint.url, `${server.deps.urls.compute}`)
      assert.ok(publicEndpoint.id)
      assert.equal(r.headers.get('content-type')?.startsWith('application/json'), true)
    })

    it('logs in by user id, omits the catalog with ?nocatalog, and scopes to domain and system', async () => {
      const byId = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: projectId } }), { query: '?nocatalog' })
      assert.equal(byId.status, 201)
      assert.equal(byId.body.token.catalog, undefined)
      const domain = await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, { domain: { name: 'Default' } }))
      assert.equal(domain.status, 201)
      assert.equal(domain.body.token.domain.id, 'default')
      assert.ok(domain.body.token.roles.some((x: any) => x.name === 'admin'))
      const system = await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, { system: { all: true } }))
      assert.equal(system.status, 201)
      assert.deepEqual(system.body.token.system, { all: true })
      // Domain and system catalogs drop nothing here (no $(project_id)s templates) but are present.
      assert.ok(Array.isArray(system.body.token.catalog))
    })

    it('auto-scopes to the default project when no scope is given, and honours explicit unscoped', async () => {
      const auto = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }))
      assert.equal(auto.status, 201)
      assert.equal(auto.body.token.project.id, projectId)
      const unscoped = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, 'unscoped'))
      assert.equal(unscoped.status, 201)
      assert.equal(unscoped.body.token.project, undefined)
      assert.equal(unscoped.body.token.roles, undefined)
      assert.equal(unscoped.body.token.catalog, undefined)
      const legacy = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { unscoped: {} }))
      assert.equal(legacy.status, 201)
      assert.equal(legacy.body.token.project, undefined)
    })

    it('answers one 401 body for a wrong password, an unknown user and an unknown project', async () => {
      const wrong = await post(server, passwordAuth({ id: aliceId, password: 'nope' }, { project: { id: projectId } }))
      const unknownUser = await post(server, passwordAuth({ name: 'nobody', domain: { id: 'default' }, password: 'x' }))
      const unknownDomain = await post(server, passwordAuth({ name: 'alice', domain: { name: 'Nowhere' }, password: 'alice-secret' }))
      const unknownProject = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: 'f'.repeat(32) } }))
      for (const r of [wrong, unknownUser, unknownDomain, unknownProject]) {
        assert.equal(r.status, 401)
        assert.deepEqual(r.body, { error: { code: 401, title: 'Unauthorized', message: GENERIC_401 } })
        assert.equal(r.headers.get('www-authenticate'), `Keystone uri="${server.deps.urls.identity}"`)
        assert.equal(r.token, null)
      }
    })

    it('answers 401 for a project without a role, a disabled project and a disabled user', async () => {
      const other = await createProject(server, 'beta')
      const noRole = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: other } }))
      assert.equal(noRole.status, 401)
      const disabled = await createProject(server, 'gamma', { enabled: false })
      const bob = await createUser(server, { name: 'bob', password: 'bob-secret', roles: [[disabled, 'member']] })
      assert.equal((await post(server, passwordAuth({ id: bob, password: 'bob-secret' }, { project: { id: disabled } }))).status, 401)
      const noSystem = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { system: { all: true } }))
      assert.equal(noSystem.status, 401)
      assert.match(noSystem.body.error.message, /has no access/)
      assert.equal((await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { domain: { id: 'default' } }))).status, 401)
      assert.equal((await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { domain: { name: 'Nowhere' } }))).status, 401)
      const carol = await createUser(server, { name: 'carol', password: 'carol-secret', enabled: false })
      const r = await post(server, passwordAuth({ id: carol, password: 'carol-secret' }))
      assert.equal(r.status, 401)
      assert.equal(r.body.error.code, 401)
    })

    it('answers 400 for malformed requests (name without domain, two scopes, missing method body, bad JSON)', async () => {
      const noDomain = await post(server, passwordAuth({ name: 'alice', password: 'alice-secret' }))
      assert.equal(noDomain.status, 400)
      assert.match(noDomain.body.error.message, /domain/)
      const twoScopes = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: projectId }, domain: { id: 'default' } }))
      assert.equal(twoScopes.status, 400)
      const projectNameNoDomain = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { name: 'alpha' } }))
      assert.equal(projectNameNoDomain.status, 400)
      const missing = await post(server, { auth: { identity: { methods: ['password'] } } })
      assert.equal(missing.status, 400)
      const noMethods = await post(server, { auth: { identity: {} } })
      assert.equal(noMethods.status, 400)
      assert.equal(noMethods.body.error.code, 400)
      assert.equal(noMethods.body.error.title, 'Bad Request')
      const res = await fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"auth":' })
      assert.equal(res.status, 400)
      assert.equal(((await res.json()) as any).error.code, 400)
      const unsupported = await post(server, { auth: { identity: { methods: ['kerberos'], kerberos: {} } } })
      assert.equal(unsupported.status, 401)
    })

    it('validates (GET 200, HEAD 200) and revokes (DELETE 204) with the statuses keystonemiddleware relies on', async () => {
      const alice = (await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: projectId } }))).token!
      const get = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': alice })
      assert.equal(get.status, 200)
      assert.equal(get.headers.get('x-subject-token'), alice)
      assert.equal(get.body.token.user.id, aliceId)
      assert.ok(Array.isArray(get.body.token.catalog))
      const nocat = await call(server, 'GET', '/auth/tokens?nocatalog', { 'x-auth-token': admin, 'x-subject-token': alice })
      assert.equal(nocat.body.token.catalog, undefined)
      const head = await fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'HEAD', headers: { 'x-auth-token': admin, 'x-subject-token': alice } })
      assert.equal(head.status, 200)
      // A user validates its own token (same token in both headers).
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': alice, 'x-subject-token': alice })).status, 200)

      // Subject problems are 404; caller problems 401 with WWW-Authenticate.
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin })).status, 404)
      const garbage = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': 'garbage' })
      assert.equal(garbage.status, 404)
      assert.deepEqual(Object.keys(garbage.body.error).sort(), ['code', 'message', 'title'])
      const tampered = alice.slice(0, -4) + (alice.endsWith('AAAA') ? 'BBBB' : 'AAAA')
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': tampered })).status, 404)
      const noCaller = await call(server, 'GET', '/auth/tokens', { 'x-subject-token': alice })
      assert.equal(noCaller.status, 401)
      assert.equal(noCaller.headers.get('www-authenticate'), `Keystone uri="${server.deps.urls.identity}"`)
      const badCaller = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': 'garbage', 'x-subject-token': alice })
      assert.equal(badCaller.status, 401)
      assert.ok(badCaller.headers.get('www-authenticate'))
      const headNoCaller = await fetch(`${server.url}/identity/v3/auth/tokens`, { method: 'HEAD', headers: { 'x-subject-token': alice } })
      assert.equal(headNoCaller.status, 401)

      // Another user's token: 403 for a non-admin caller.
      const bob = await createUser(server, { name: 'bob2', password: 'bob-secret', roles: [[projectId, 'member']] })
      const bobToken = (await post(server, passwordAuth({ id: bob, password: 'bob-secret' }, { project: { id: projectId } }))).token!
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': bobToken, 'x-subject-token': alice })).status, 403)
      assert.equal((await call(server, 'DELETE', '/auth/tokens', { 'x-auth-token': bobToken, 'x-subject-token': alice })).status, 403)

      // Revoke: 204, then 404 for validate and for a second revoke; the caller side is 401 after that.
      assert.equal((await call(server, 'DELETE', '/auth/tokens', { 'x-auth-token': alice, 'x-subject-token': alice })).status, 204)
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': alice })).status, 404)
      assert.equal((await call(server, 'DELETE', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': alice })).status, 404)
      assert.equal((await call(server, 'GET', '/auth/projects', { 'x-auth-token': alice })).status, 401)
      assert.equal((await call(server, 'DELETE', '/auth/tokens', { 'x-auth-token': admin })).status, 404)
    })

    it('rescopes with the token method, keeping expiry and the audit chain; garbage token is 404', async () => {
      const unscoped = await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, 'unscoped'))
      const rescoped = await post(server, { auth: { identity: { methods: ['token'], token: { id: unscoped.token } }, scope: { project: { id: projectId } } } })
      assert.equal(rescoped.status, 201)
      assert.equal(rescoped.body.token.expires_at, unscoped.body.token.expires_at)
      assert.equal(rescoped.body.token.audit_ids.length, 2)
      assert.equal(rescoped.body.token.audit_ids[1], unscoped.body.token.audit_ids[0])
      assert.deepEqual([...rescoped.body.token.methods].sort(), ['password', 'token'])
      assert.equal(rescoped.body.token.project.id, projectId)
      // Rescoping the rescoped token keeps the chain's root.
      const again = await post(server, { auth: { identity: { methods: ['token'], token: { id: rescoped.token } }, scope: 'unscoped' } })
      assert.equal(again.status, 201)
      assert.equal(again.body.token.audit_ids[1], unscoped.body.token.audit_ids[0])
      // Revoking the parent does not revoke the child (Keystone revokes by the token's own audit id).
      assert.equal((await call(server, 'DELETE', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': unscoped.token! })).status, 204)
      assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': rescoped.token! })).status, 200)
      const garbage = await post(server, { auth: { identity: { methods: ['token'], token: { id: 'garbage' } } } })
      assert.equal(garbage.status, 404)
    })

    it('serves /auth/catalog (403 unless project-scoped), /auth/projects, /auth/domains, /auth/system', async () => {
      const alice = (await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: projectId } }))).token!
      const catalog = await call(server, 'GET', '/auth/catalog', { 'x-auth-token': alice })
      assert.equal(catalog.status, 200)
      assert.ok(catalog.body.catalog.some((s: any) => s.type === 'identity'))
      assert.equal(catalog.body.links.self, `${server.deps.urls.identity}/auth/catalog`)
      const system = await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, { system: { all: true } }))
      assert.equal((await call(server, 'GET', '/auth/catalog', { 'x-auth-token': system.token! })).status, 403)
      const projects = await call(server, 'GET', '/auth/projects', { 'x-auth-token': alice })
      assert.equal(projects.status, 200)
      assert.deepEqual(projects.body.projects.map((p: any) => p.id), [projectId])
      assert.deepEqual(Object.keys(projects.body.links).sort(), ['next', 'previous', 'self'])
      assert.deepEqual((await call(server, 'GET', '/auth/domains', { 'x-auth-token': alice })).body.domains, [])
      assert.deepEqual((await call(server, 'GET', '/auth/system', { 'x-auth-token': alice })).body.system, [])
      assert.deepEqual((await call(server, 'GET', '/auth/system', { 'x-auth-token': admin })).body.system, [{ all: true }])
      assert.deepEqual((await call(server, 'GET', '/auth/domains', { 'x-auth-token': admin })).body.domains.map((d: any) => d.id), ['default'])
      assert.equal((await call(server, 'GET', '/auth/catalog')).status, 401)
    })

    it('ends tokens when the user is disabled, the password changes, the role is removed or the project is disabled', async () => {
      const p = await createProject(server, 'delta')
      const dave = await createUser(server, { name: 'dave', password: 'dave-secret', roles: [[p, 'member']] })
      const login = async () => (await post(server, passwordAuth({ id: dave, password: 'dave-secret' }, { project: { id: p } }))).token!
      const status = async (t: string) => (await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': t })).status

      let t = await login()
      assert.equal(await status(t), 200)
      await identityWrite(server, (db) => db.updateTable('users').set({ password_created_at: Date.now() + 1 }).where('id', '=', dave).execute())
      assert.equal(await status(t), 404, 'password change')
      await identityWrite(server, (db) => db.updateTable('users').set({ password_created_at: Date.now() - 10 }).where('id', '=', dave).execute())

      t = await login()
      await identityWrite(server, (db) => db.updateTable('users').set({ enabled: 0 }).where('id', '=', dave).execute())
      assert.equal(await status(t), 404, 'user disabled')
      await identityWrite(server, (db) => db.updateTable('users').set({ enabled: 1 }).where('id', '=', dave).execute())

      t = await login()
      await identityWrite(server, (db) => db.updateTable('projects').set({ enabled: 0 }).where('id', '=', p).execute())
      assert.equal(await status(t), 404, 'project disabled')
      await identityWrite(server, (db) => db.updateTable('projects').set({ enabled: 1 }).where('id', '=', p).execute())

      t = await login()
      await server.deps.tokens.revokeUser(dave)
      assert.equal(await status(t), 404, 'revoked by user')
      const after = await login()
      assert.equal(await status(after), 200, 'a token issued after the event is valid')

      t = await login()
      const member = await roleId(server, 'member')
      await identityWrite(server, (db) => db.deleteFrom('role_assignments').where('actor_id', '=', dave).where('role_id', '=', member).execute())
      assert.equal(await status(t), 404, 'role removed')
    })

    it('validates and rescopes without reading the database, and the token reveals nothing to its holder', async () => {
      const alice = (await post(server, passwordAuth({ id: aliceId, password: 'alice-secret' }, { project: { id: projectId } }))).token!
      const raw = Buffer.from(alice, 'base64url').toString('latin1')
      assert.ok(!raw.includes(aliceId) && !raw.includes(projectId) && !raw.includes('password'), 'the payload is encrypted')
      // Periodic readers are stopped before the counting proxy goes in: stopping hands leases back through the store.
      server.deps.tokens.stop()
      await server.deps.runner.stop(1000)
      server.deps.conductor.stop()
      await server.deps.onboarding.stop()
      await server.clusterJobs.stop()
      const store = server.deps.store
      const real = store.db
      let reads = 0
      store.db = new Proxy(real, {
        get(target, property, receiver) {
          reads++
          return Reflect.get(target, property, receiver)
        },
      })
      // Periodic readers (the generation poll, the task runner, the conductor, the agent-driver sync, cluster jobs) are
      // paused, so any access counted comes from the requests.
      try {
        reads = 0
        for (let i = 0; i < 20; i++) {
          assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': alice })).status, 200)
          assert.equal((await call(server, 'GET', '/auth/catalog', { 'x-auth-token': alice })).status, 200)
        }
        const rescoped = await post(server, { auth: { identity: { methods: ['token'], token: { id: alice } }, scope: { project: { id: projectId } } } })
        assert.equal(rescoped.status, 201)
        assert.equal(reads, 0, `${reads} database accesses`)
      } finally {
        store.db = real
        server.deps.tokens.start()
        server.deps.runner.start()
        server.clusterJobs.start()
      }
    })

    it('sees its own process’s identity writes on the next request, without waiting for the poll', async () => {
      const p = await createProject(server, 'epsilon')
      const erin = await createUser(server, { name: 'erin', password: 'erin-secret', roles: [[p, 'member']] })
      const t = (await post(server, passwordAuth({ id: erin, password: 'erin-secret' }, { project: { id: p } }))).token!
      assert.equal((await call(server, 'GET', '/auth/projects', { 'x-auth-token': t })).status, 200)
      server.deps.tokens.stop()
      try {
        // A writer as the admin API is one: a transaction that bumps the generation, and nothing else.
        await server.deps.store.db.transaction().execute(async (tx) => {
          await tx.updateTable('users').set({ enabled: 0 }).where('id', '=', erin).execute()
          await touchIdentity(tx)
        })
        assert.equal((await call(server, 'GET', '/auth/projects', { 'x-auth-token': t })).status, 401)
        assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': t })).status, 404)
      } finally {
        server.deps.tokens.start()
      }
    })

    it('answers JSON errors for unknown routes (404) and wrong methods (405)', async () => {
      const unknown = await call(server, 'GET', '/no/such/thing')
      assert.equal(unknown.status, 404)
      assert.equal(unknown.body.error.code, 404)
      const wrongMethod = await call(server, 'PUT', '/auth/tokens')
      assert.equal(wrongMethod.status, 405)
      assert.equal(wrongMethod.body.error.code, 405)
      assert.equal(unknown.headers.get('vary'), 'X-Auth-Token')
    })
  })
}

describe('allow_expired', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ env: { PCC_TOKEN_EXPIRATION_SECONDS: '2', PCC_TOKEN_ALLOW_EXPIRED_WINDOW_SECONDS: '6' } })
  })
  after(() => server?.close())

  it('validates an expired token only with allow_expired, and only inside the window', async () => {
    const subject = (await post(server, passwordAuth({ name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD }, { project: { name: 'admin', domain: { id: 'default' } } }))).token!
    const issuedAt = Date.now()
    await new Promise((r) => setTimeout(r, 2200))
    const caller = await adminToken(server)
    assert.equal((await call(server, 'GET', '/auth/tokens', { 'x-auth-token': caller, 'x-subject-token': subject })).status, 404)
    assert.equal((await call(server, 'GET', '/auth/tokens?allow_expired=1', { 'x-auth-token': caller, 'x-subject-token': subject })).status, 200)
    assert.equal((await call(server, 'GET', '/auth/tokens?allow_expired=0', { 'x-auth-token': caller, 'x-subject-token': subject })).status, 404)
    const head = await fetch(`${server.url}/identity/v3/auth/tokens?allow_expired=true`, { method: 'HEAD', headers: { 'x-auth-token': caller, 'x-subject-token': subject } })
    assert.equal(head.status, 200)
    // An expired caller token is 401, allow_expired or not.
    assert.equal((await call(server, 'GET', '/auth/tokens?allow_expired=1', { 'x-auth-token': subject, 'x-subject-token': subject })).status, 401)
    await new Promise((r) => setTimeout(r, Math.max(0, issuedAt + 8300 - Date.now())))
    const caller2 = await adminToken(server)
    assert.equal((await call(server, 'GET', '/auth/tokens?allow_expired=1', { 'x-auth-token': caller2, 'x-subject-token': subject })).status, 404)
  })
})
