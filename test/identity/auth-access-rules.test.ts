/* eslint-disable @typescript-eslint/no-explicit-any -- JSON response bodies, checked field by field */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, call, createProject, createUser, post, passwordAuth } from './auth-helpers.js'

for (const dialect of DIALECTS) {
  describe(`application credentials: expiry to the microsecond, access rules (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let projectId: string
    let userId: string
    let userToken: string
    let otherId: string
    let otherToken: string

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminToken(server)
      projectId = await createProject(server, 'ruled')
      userId = await createUser(server, { name: 'ruled-owner', password: 'owner-secret', roles: [[projectId, 'member']] })
      userToken = (await post(server, passwordAuth({ id: userId, password: 'owner-secret' }, { project: { id: projectId } }))).token!
      otherId = await createUser(server, { name: 'ruled-other', password: 'other-secret', roles: [[projectId, 'member']] })
      otherToken = (await post(server, passwordAuth({ id: otherId, password: 'other-secret' }, { project: { id: projectId } }))).token!
    })
    after(() => server?.close())

    const creds = () => `/users/${userId}/application_credentials`
    const rules = (user = userId) => `/users/${user}/access_rules`
    const login = async (id: string, secret: string) => post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id, secret } } } })
    const get = async (path: string, token: string) => (await fetch(`${server.url}${path}`, { headers: { 'x-auth-token': token } })).status

    it('answers expires_at as sent, to the microsecond and without a zone (and reads a zone when one is sent)', async () => {
      const expires = new Date(Date.now() + 3_600_000).toISOString().replace(/Z$/, '')
      const sent = `${expires}123`
      const created = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'micro', expires_at: sent } })
      assert.equal(created.status, 201)
      assert.equal(created.body.application_credential.expires_at, sent)
      const shown = await call(server, 'GET', `${creds()}/${created.body.application_credential.id}`, { 'x-auth-token': userToken })
      assert.equal(shown.body.application_credential.expires_at, sent)
      const zoned = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'zoned', expires_at: '2999-01-01T01:00:00.000001+01:00' } })
      assert.equal(zoned.body.application_credential.expires_at, '2999-01-01T00:00:00.000001')
    })

    it('stores the rules, reuses a user\'s rule, and lists, shows and deletes them once no credential names them', async () => {
      const rule = { service: 'compute', method: 'GET', path: '/v2.1/servers/*/ips' }
      const first = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'ips', access_rules: [rule] } })
      assert.equal(first.status, 201)
      const [stored] = first.body.application_credential.access_rules
      assert.deepEqual({ ...stored, id: undefined }, { ...rule, id: undefined })
      // The same rule, or the rule by id, is the same row.
      const second = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'ips-again', access_rules: [rule] } })
      assert.equal(second.body.application_credential.access_rules[0].id, stored.id)
      const third = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'by-id', access_rules: [{ id: stored.id }] } })
      assert.equal(third.body.application_credential.access_rules[0].id, stored.id)

      const listed = await call(server, 'GET', rules(), { 'x-auth-token': userToken })
      assert.equal(listed.status, 200)
      assert.deepEqual(listed.body.access_rules.map((r: any) => r.id), [stored.id])
      assert.equal((await call(server, 'GET', `${rules()}?service=image`, { 'x-auth-token': userToken })).body.access_rules.length, 0)
      const shown = await call(server, 'GET', `${rules()}/${stored.id}`, { 'x-auth-token': userToken })
      assert.equal(shown.status, 200)
      assert.equal(shown.body.access_rule.path, rule.path)

      // In use: 403. Once its credentials are gone the rule stays, until deleted.
      assert.equal((await call(server, 'DELETE', `${rules()}/${stored.id}`, { 'x-auth-token': userToken })).status, 403)
      for (const c of [first, second, third]) {
        assert.equal((await call(server, 'DELETE', `${creds()}/${c.body.application_credential.id}`, { 'x-auth-token': userToken })).status, 204)
      }
      assert.equal((await call(server, 'GET', rules(), { 'x-auth-token': userToken })).body.access_rules.length, 1)
      assert.equal((await call(server, 'DELETE', `${rules()}/${stored.id}`, { 'x-auth-token': userToken })).status, 204)
      assert.equal((await call(server, 'GET', rules(), { 'x-auth-token': userToken })).body.access_rules.length, 0)
      assert.equal((await call(server, 'GET', `${rules()}/${stored.id}`, { 'x-auth-token': userToken })).status, 404)
    })

    it('refuses malformed rules and another user\'s rule, and keeps rules to their owner', async () => {
      const bad = [
        [{ service: 'compute', method: 'GET' }],
        [{ service: 'compute', method: 'FETCH', path: '/x' }],
        [{ service: 'compute', method: 'GET', path: 'no-slash' }],
        [{ service: 'compute', method: 'GET', path: '/x', extra: 1 }],
      ]
      for (const accessRules of bad) {
        const refused = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'bad', access_rules: accessRules } })
        assert.equal(refused.status, 400, JSON.stringify(accessRules))
        assert.ok(refused.body.error.message)
      }
      const own = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, { application_credential: { name: 'owned', access_rules: [{ service: 'image', method: 'GET', path: '/v2/images' }] } })
      const ruleId = own.body.application_credential.access_rules[0].id
      const foreign = await call(server, 'POST', `/users/${otherId}/application_credentials`, { 'x-auth-token': otherToken }, { application_credential: { name: 'steal', access_rules: [{ id: ruleId }] } })
      assert.equal(foreign.status, 404)
      assert.equal((await server.deps.store.db.selectFrom('application_credentials').select('id').where('name', '=', 'steal').execute()).length, 0)
      // Another user neither sees nor deletes it; an admin reads it; no token, 401.
      assert.equal((await call(server, 'GET', rules(), { 'x-auth-token': otherToken })).status, 403)
      assert.equal((await call(server, 'DELETE', `${rules()}/${ruleId}`, { 'x-auth-token': otherToken })).status, 403)
      assert.equal((await call(server, 'GET', `${rules(otherId)}/${ruleId}`, { 'x-auth-token': otherToken })).status, 404)
      assert.equal((await call(server, 'GET', rules(), { 'x-auth-token': admin })).status, 200)
      assert.equal((await call(server, 'GET', rules())).status, 401)
    })

    it('holds the credential\'s tokens to its rules: a request outside them is 401, everywhere', async () => {
      const created = await call(server, 'POST', creds(), { 'x-auth-token': userToken }, {
        application_credential: {
          name: 'flavors-only',
          secret: 'ruled-secret',
          access_rules: [
            { service: 'compute', method: 'GET', path: '/v2.1/flavors/*' },
            { service: 'image', method: 'GET', path: '/v2/**' },
          ],
        },
      })
      assert.equal(created.status, 201)
      const token = (await login(created.body.application_credential.id, 'ruled-secret')).token!
      const tokenBody = await call(server, 'GET', '/auth/tokens', { 'x-auth-token': admin, 'x-subject-token': token })
      assert.deepEqual(tokenBody.body.token.application_credential.access_rules.map((r: any) => r.path), ['/v2.1/flavors/*', '/v2/**'])

      const flavorId = (await (await fetch(`${server.url}/compute/v2.1/flavors`, { headers: { 'x-auth-token': userToken } })).json() as any).flavors[0].id
      assert.equal(await get(`/compute/v2.1/flavors/${flavorId}`, token), 200)
      assert.equal(await get('/image/v2/images', token), 200)
      assert.equal(await get('/image/v2/images?limit=1', token), 200)
      // `*` is one segment: not the list, not deeper; another method, service or path: 401 in the service's shape.
      assert.equal(await get('/compute/v2.1/flavors', token), 401)
      assert.equal(await get(`/compute/v2.1/flavors/${flavorId}/os-extra_specs`, token), 401)
      assert.equal(await get('/compute/v2.1/servers', token), 401)
      assert.equal(await get('/network/v2.0/networks', token), 401)
      const deleted = await fetch(`${server.url}/image/v2/images/nope`, { method: 'DELETE', headers: { 'x-auth-token': token } })
      assert.equal(deleted.status, 401)
      assert.equal((await call(server, 'GET', '/auth/projects', { 'x-auth-token': token })).status, 401)
      // The owner's own token is not held to them.
      assert.equal(await get('/compute/v2.1/servers', userToken), 200)
    })
  })
}
