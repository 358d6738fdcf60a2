import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../../src/testkit/harness.js'
import { errorMessage, startFixture, type Fixture, type Json } from './fixture.js'

for (const dialect of DIALECTS) {
  describe(`identity endpoint filtering, OS-EP-FILTER (${dialect})`, () => {
    let f: Fixture
    let projectId: string
    let otherProjectId: string
    let userId: string
    let computeId: string
    let imageId: string
    before(async () => {
      f = await startFixture(dialect)
      projectId = (await f.call('POST', '/projects', { body: { project: { name: 'filtered', domain_id: 'default' } } })).body.project.id
      otherProjectId = (await f.call('POST', '/projects', { body: { project: { name: 'unfiltered', domain_id: 'default' } } })).body.project.id
      userId = (await f.call('POST', '/users', { body: { user: { name: 'filtered-member', domain_id: 'default' } } })).body.user.id
      const memberRole = (await f.call('GET', '/roles?name=member')).body.roles[0].id
      for (const p of [projectId, otherProjectId]) await f.call('PUT', `/projects/${p}/users/${userId}/roles/${memberRole}`)
      const services: Json[] = (await f.call('GET', '/services')).body.services
      computeId = services.find((s) => s.type === 'compute').id
      imageId = services.find((s) => s.type === 'image').id
    })
    after(() => f.close())

    /** The service types of the catalog a project-scoped token of the user gets. */
    const catalogTypes = async (project: string): Promise<string[]> => {
      const token = await f.tokenFor(userId, { p: project })
      const reply = await f.call('GET', '/auth/catalog', { token })
      assert.equal(reply.status, 200)
      return reply.body.catalog.map((s: Json) => s.type).sort()
    }

    it('creates, lists, shows, checks, updates and deletes endpoint groups', async () => {
      const created = await f.call('POST', '/OS-EP-FILTER/endpoint_groups', { body: { endpoint_group: { name: 'compute-only', description: 'nova', filters: { service_id: computeId } } } })
      assert.equal(created.status, 201)
      const g = created.body.endpoint_group
      assert.deepEqual({ name: g.name, description: g.description, filters: g.filters }, { name: 'compute-only', description: 'nova', filters: { service_id: computeId } })
      assert.equal(g.links.self, `${f.base}/OS-EP-FILTER/endpoint_groups/${g.id}`)
      assert.deepEqual((await f.call('GET', '/OS-EP-FILTER/endpoint_groups')).body.endpoint_groups, [g])
      assert.deepEqual((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${g.id}`)).body.endpoint_group, g)
      assert.equal((await f.call('HEAD', `/OS-EP-FILTER/endpoint_groups/${g.id}`)).status, 200)
      const matched = await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${g.id}/endpoints`)
      assert.ok(matched.body.endpoints.length > 0 && matched.body.endpoints.every((e: Json) => e.service_id === computeId))

      const updated = await f.call('PATCH', `/OS-EP-FILTER/endpoint_groups/${g.id}`, { body: { endpoint_group: { name: 'image-public', filters: { service_id: imageId, interface: 'public' } } } })
      assert.equal(updated.status, 200)
      assert.deepEqual(updated.body.endpoint_group.filters, { service_id: imageId, interface: 'public' })
      assert.equal(updated.body.endpoint_group.description, 'nova')
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/endpoint_groups/${g.id}`)).status, 204)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${g.id}`)).status, 404)
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/endpoint_groups/${g.id}`)).status, 404)
    })

    it('narrows the catalog of a project to its endpoints and endpoint groups, and only that project', async () => {
      const everything = await catalogTypes(projectId)
      assert.ok(everything.includes('compute') && everything.includes('image') && everything.includes('network'))

      const group = (await f.call('POST', '/OS-EP-FILTER/endpoint_groups', { body: { endpoint_group: { name: 'images', filters: { service_id: imageId } } } })).body.endpoint_group
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/${projectId}`)).status, 204)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/${projectId}`)).body.project.id, projectId)
      assert.deepEqual((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects`)).body.projects.map((p: Json) => p.id), [projectId])
      assert.deepEqual((await f.call('GET', `/OS-EP-FILTER/projects/${projectId}/endpoint_groups`)).body.endpoint_groups.map((g: Json) => g.id), [group.id])
      assert.deepEqual(await catalogTypes(projectId), ['image'])
      assert.deepEqual(await catalogTypes(otherProjectId), everything)

      // A compute endpoint associated directly joins the group's.
      const computeEndpoint = (await f.call('GET', `/endpoints?service_id=${computeId}&interface=public`)).body.endpoints[0]
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/projects/${projectId}/endpoints/${computeEndpoint.id}`)).status, 204)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/projects/${projectId}/endpoints/${computeEndpoint.id}`)).status, 204)
      assert.deepEqual((await f.call('GET', `/OS-EP-FILTER/endpoints/${computeEndpoint.id}/projects`)).body.projects.map((p: Json) => p.id), [projectId])
      const projectEndpoints = (await f.call('GET', `/OS-EP-FILTER/projects/${projectId}/endpoints`)).body.endpoints
      assert.ok(projectEndpoints.some((e: Json) => e.id === computeEndpoint.id) && projectEndpoints.some((e: Json) => e.service_id === imageId))
      assert.deepEqual(await catalogTypes(projectId), ['compute', 'image'])
      const token = await f.tokenFor(userId, { p: projectId })
      const compute = (await f.call('GET', '/auth/catalog', { token })).body.catalog.find((s: Json) => s.type === 'compute')
      assert.deepEqual(compute.endpoints.map((e: Json) => e.id), [computeEndpoint.id])

      // Dissociating everything gives the whole catalog back; deleting a group ends its associations.
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/projects/${projectId}/endpoints/${computeEndpoint.id}`)).status, 204)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/projects/${projectId}/endpoints/${computeEndpoint.id}`)).status, 404)
      assert.deepEqual(await catalogTypes(projectId), ['image'])
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/endpoint_groups/${group.id}`)).status, 204)
      assert.deepEqual(await catalogTypes(projectId), everything)
      assert.equal((await f.server.deps.store.db.selectFrom('project_endpoint_groups').selectAll().execute()).length, 0)
    })

    it('refuses bad filters, unknown groups, projects and endpoints, and non-admins, changing nothing', async () => {
      for (const body of [
        { endpoint_group: { name: 'x', filters: { service_type: 'compute' } } },
        { endpoint_group: { name: 'x' } },
        { endpoint_group: { name: '', filters: {} } },
        { endpoint_group: { name: 'x', filters: { interface: 5 } } },
      ]) {
        const reply = await f.call('POST', '/OS-EP-FILTER/endpoint_groups', { body })
        assert.equal(reply.status, 400, JSON.stringify(body))
        assert.ok(errorMessage(reply))
      }
      assert.equal((await f.call('GET', '/OS-EP-FILTER/endpoint_groups')).body.endpoint_groups.length, 0)
      const group = (await f.call('POST', '/OS-EP-FILTER/endpoint_groups', { body: { endpoint_group: { name: 'kept', filters: { interface: 'public' } } } })).body.endpoint_group
      assert.equal((await f.call('PATCH', `/OS-EP-FILTER/endpoint_groups/${group.id}`, { body: { endpoint_group: { filters: { nope: 'x' } } } })).status, 400)
      assert.deepEqual((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${group.id}`)).body.endpoint_group.filters, { interface: 'public' })
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/no-such-project`)).status, 404)
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/endpoint_groups/no-such-group/projects/${projectId}`)).status, 404)
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/projects/${projectId}/endpoints/no-such-endpoint`)).status, 404)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/${projectId}`)).status, 404)
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/${projectId}`)).status, 404)

      const member = await f.tokenFor(userId, { p: projectId })
      assert.equal((await f.call('GET', '/OS-EP-FILTER/endpoint_groups', { token: member })).status, 403)
      assert.equal((await f.call('PUT', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects/${projectId}`, { token: member })).status, 403)
      assert.equal((await f.call('DELETE', `/OS-EP-FILTER/endpoint_groups/${group.id}`, { token: member })).status, 403)
      assert.equal((await f.call('GET', '/OS-EP-FILTER/endpoint_groups', { token: null })).status, 401)
      assert.equal((await f.call('GET', `/OS-EP-FILTER/endpoint_groups/${group.id}/projects`)).body.projects.length, 0)
    })
  })
}
