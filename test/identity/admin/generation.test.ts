/**
 * Every identity write bumps the identity generation in its own transaction, so each process's token caches
 * reload; a write that fails (400/404/409) bumps nothing, since its transaction rolls back, and neither does
 * counting a failed authentication.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { identityGeneration } from '../../../src/server/identity/generation.js'
import { startFixture, type Fixture } from './fixture.js'

describe('identity writes bump the generation', () => {
  let f: Fixture
  before(async () => {
    f = await startFixture('sqlite')
  })
  after(() => f.close())

  it('once per successful write, never for a failed one', async () => {
    const db = f.server.deps.store.db
    const ids: Record<string, string> = {}
    const ok = async (method: string, path: string, body?: unknown) => {
      const before = await identityGeneration(db)
      const res = await f.call(method, path, { body })
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
      assert.ok((await identityGeneration(db)) > before, `${method} ${path} did not bump the generation`)
      return res.body
    }
    const fails = async (method: string, path: string, body?: unknown) => {
      const before = await identityGeneration(db)
      const res = await f.call(method, path, { body })
      assert.ok(res.status >= 400, `${method} ${path}: ${res.status}`)
      assert.equal(await identityGeneration(db), before, `${method} ${path} failed but bumped the generation`)
    }
    ids.domain = (await ok('POST', '/domains', { domain: { name: 'gen' } })).domain.id
    await ok('PATCH', `/domains/${ids.domain}`, { domain: { description: 'x' } })
    ids.project = (await ok('POST', '/projects', { project: { name: 'gen', domain_id: ids.domain } })).project.id
    await ok('PATCH', `/projects/${ids.project}`, { project: { enabled: false } })
    await ok('PUT', `/projects/${ids.project}/tags`, { tags: ['a'] })
    await ok('PUT', `/projects/${ids.project}/tags/b`)
    await ok('DELETE', `/projects/${ids.project}/tags/b`)
    ids.user = (await ok('POST', '/users', { user: { name: 'gen', domain_id: ids.domain, password: 'pw-gen-1' } })).user.id
    await ok('PATCH', `/users/${ids.user}`, { user: { password: 'pw-gen-2' } })
    await ok('POST', `/users/${ids.user}/password`, { user: { original_password: 'pw-gen-2', password: 'pw-gen-3' } })
    // A wrong original password counts a failed authentication but is no identity write: anyone may send one,
    // and it must not make every process reload its identity snapshot (found by the fuzz suite).
    await fails('POST', `/users/${ids.user}/password`, { user: { original_password: 'not-it', password: 'pw-gen-4' } })
    assert.equal((await db.selectFrom('users').select('failed_auth_count').where('id', '=', ids.user).executeTakeFirstOrThrow()).failed_auth_count, 1)
    ids.group = (await ok('POST', '/groups', { group: { name: 'gen', domain_id: ids.domain } })).group.id
    await ok('PUT', `/groups/${ids.group}/users/${ids.user}`)
    await ok('DELETE', `/groups/${ids.group}/users/${ids.user}`)
    ids.role = (await ok('POST', '/roles', { role: { name: 'gen' } })).role.id
    ids.reader = (await f.call('GET', '/roles?name=reader')).body.roles[0].id
    await ok('PUT', `/roles/${ids.role}/implies/${ids.reader}`)
    await ok('DELETE', `/roles/${ids.role}/implies/${ids.reader}`)
    await ok('PUT', `/projects/${ids.project}/users/${ids.user}/roles/${ids.role}`)
    await ok('PUT', `/domains/${ids.domain}/groups/${ids.group}/roles/${ids.role}`)
    await ok('PUT', `/system/users/${ids.user}/roles/${ids.role}`)
    await ok('DELETE', `/system/users/${ids.user}/roles/${ids.role}`)
    await ok('DELETE', `/projects/${ids.project}/users/${ids.user}/roles/${ids.role}`)
    await ok('POST', '/regions', { region: { id: 'GenRegion' } })
    ids.service = (await ok('POST', '/services', { service: { type: 'gen' } })).service.id
    ids.endpoint = (await ok('POST', '/endpoints', { endpoint: { service_id: ids.service, interface: 'public', url: 'http://gen', region_id: 'GenRegion' } })).endpoint.id
    await ok('DELETE', `/endpoints/${ids.endpoint}`)
    await ok('DELETE', `/services/${ids.service}`)
    await ok('DELETE', '/regions/GenRegion')
    await ok('DELETE', `/roles/${ids.role}`)
    await ok('DELETE', `/groups/${ids.group}`)
    await ok('DELETE', `/users/${ids.user}`)
    await ok('DELETE', `/projects/${ids.project}`)
    await ok('PATCH', `/domains/${ids.domain}`, { domain: { enabled: false } })
    await ok('DELETE', `/domains/${ids.domain}`)

    await fails('POST', '/projects', { project: { name: 'admin', domain_id: 'default' } })
    await fails('POST', '/projects', { project: { name: 'x', enabled: 'no' } })
    await fails('PATCH', '/users/nope', { user: { enabled: false } })
    await fails('DELETE', '/domains/default')
  })
})
