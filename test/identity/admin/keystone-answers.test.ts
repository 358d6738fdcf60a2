/**
 * Identity behaviour Tempest's identity tests hold pcc to, checked without Tempest: endpoints that name a region
 * not created yet, projects acting as domains, 404 for an unknown domain, and domain-specific roles (what they may
 * imply, and that they are never effective themselves).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { errorMessage, startFixture, type Fixture } from './fixture.js'

describe('identity answers as Keystone gives them', () => {
  let f: Fixture
  before(async () => {
    f = await startFixture()
  })
  after(() => f.close())

  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await f.call(method, path, { body })
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }

  it('creates the region an endpoint names when it does not exist yet (region_id, or the legacy region)', async () => {
    const service = (await ok('POST', '/services', { service: { type: 'demo', name: 'demo' } })).service
    for (const [field, region] of [['region_id', 'far-away'], ['region', 'further-away']]) {
      const endpoint = (await ok('POST', '/endpoints', { endpoint: { service_id: service.id, interface: 'public', url: 'http://x', [field]: region } })).endpoint
      assert.equal(endpoint.region_id, region)
      assert.equal(endpoint.region, region)
      assert.equal((await ok('GET', `/regions/${region}`)).region.id, region)
    }
    const endpoint = (await ok('GET', '/endpoints?region_id=far-away')).endpoints[0]
    assert.equal((await ok('PATCH', `/endpoints/${endpoint.id}`, { endpoint: { region_id: 'moved' } })).endpoint.region_id, 'moved')
    assert.equal((await ok('GET', '/regions/moved')).region.id, 'moved')
  })

  it('creates, shows, lists, updates and deletes a project acting as a domain', async () => {
    const project = (await ok('POST', '/projects', { project: { name: 'dom-as-project', domain_id: null, is_domain: true, description: 'd' } })).project
    assert.deepEqual([project.is_domain, project.domain_id, project.parent_id], [true, null, null])
    assert.equal((await ok('GET', `/domains/${project.id}`)).domain.name, 'dom-as-project', 'it is a domain')
    assert.equal((await ok('GET', `/projects/${project.id}`)).project.is_domain, true)
    assert.ok((await ok('GET', '/projects?is_domain=true')).projects.some((p: { id: string }) => p.id === project.id))
    assert.ok(!(await ok('GET', '/projects')).projects.some((p: { id: string }) => p.id === project.id), 'not among regular projects')
    const inside = (await ok('POST', '/projects', { project: { name: 'inside', domain_id: project.id } })).project
    assert.equal(inside.domain_id, project.id)
    assert.equal((await f.call('DELETE', `/projects/${project.id}`)).status, 403, 'an enabled domain stays')
    assert.equal((await ok('PATCH', `/projects/${project.id}`, { project: { enabled: false } })).project.enabled, false)
    assert.equal((await f.call('DELETE', `/projects/${project.id}`)).status, 204)
    assert.equal((await f.call('GET', `/domains/${project.id}`)).status, 404)
    assert.equal((await f.call('GET', `/projects/${inside.id}`)).status, 404, 'its projects went with it')
    const refused = await f.call('POST', '/projects', { body: { project: { name: 'x', is_domain: true, domain_id: 'default' } } })
    assert.equal(refused.status, 400)
    assert.match(errorMessage(refused), /is_domain/)
  })

  it('answers 404 for a user, group, project or role in a domain that does not exist', async () => {
    for (const [path, body] of [
      ['/users', { user: { name: 'u', domain_id: 'no-such-domain' } }],
      ['/groups', { group: { name: 'g', domain_id: 'no-such-domain' } }],
      ['/projects', { project: { name: 'p', domain_id: 'no-such-domain' } }],
      ['/roles', { role: { name: 'r', domain_id: 'no-such-domain' } }],
    ] as const) {
      const res = await f.call('POST', path, { body })
      assert.equal(res.status, 404, `${path}: ${JSON.stringify(res.body)}`)
      assert.match(errorMessage(res), /no-such-domain/)
    }
  })

  it('lets domain-specific roles imply global ones, not the other way, and never makes them effective', async () => {
    const domain = (await ok('POST', '/domains', { domain: { name: 'roles-domain' } })).domain
    const alias = (await ok('POST', '/roles', { role: { name: 'alias', domain_id: domain.id } })).role
    const other = (await ok('POST', '/roles', { role: { name: 'alias2', domain_id: domain.id } })).role
    const globalRole = (await ok('POST', '/roles', { role: { name: 'global-implied' } })).role
    assert.equal((await f.call('PUT', `/roles/${alias.id}/implies/${other.id}`)).status, 201, 'domain role → domain role')
    assert.equal((await f.call('PUT', `/roles/${alias.id}/implies/${globalRole.id}`)).status, 201, 'domain role → global role')
    const refused = await f.call('PUT', `/roles/${globalRole.id}/implies/${alias.id}`)
    assert.equal(refused.status, 403, 'global role → domain role')

    const project = (await ok('POST', '/projects', { project: { name: 'roles-project', domain_id: domain.id } })).project
    const user = (await ok('POST', '/users', { user: { name: 'roles-user', domain_id: domain.id, password: 'a-long-password' } })).user
    assert.equal((await f.call('PUT', `/projects/${project.id}/users/${user.id}/roles/${alias.id}`)).status, 204)
    const effective = (await ok('GET', `/role_assignments?effective&user.id=${user.id}&scope.project.id=${project.id}`)).role_assignments
    assert.deepEqual(effective.map((a: { role: { id: string } }) => a.role.id), [globalRole.id], 'only the implied global role')
    const direct = (await ok('GET', `/role_assignments?user.id=${user.id}`)).role_assignments
    assert.deepEqual(direct.map((a: { role: { id: string } }) => a.role.id), [alias.id], 'the grant itself is listed')
    const token = await f.tokenFor(user.id, { p: project.id })
    const res = await fetch(`${f.base}/auth/tokens`, { headers: { 'x-auth-token': f.adminToken, 'x-subject-token': token } })
    const roles = ((await res.json()) as { token: { roles: { name: string }[] } }).token.roles.map((r) => r.name)
    assert.deepEqual(roles, ['global-implied'], 'the token carries the implied role, not the domain role')
  })
})
