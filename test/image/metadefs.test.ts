import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ensureStandardNamespaces, STANDARD_NAMESPACES } from '../../src/server/image/metadef-standard.js'
import { adminSession, call, projectSession, type Session } from './support.js'

const NS = '/image/v2/metadefs/namespaces'

for (const dialect of DIALECTS) {
  describe(`image metadata definitions (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let member: Session

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      member = await projectSession(server)
    })
    after(() => server?.close())

    it("serves Glance's standard namespaces from the start, with their resource types, and loads them once", async () => {
      const list = await call(server, member, 'GET', NS)
      assert.equal(list.status, 200)
      const names = list.body.namespaces.map((n: { namespace: string }) => n.namespace)
      for (const ns of STANDARD_NAMESPACES) assert.ok(names.includes(ns.namespace), ns.namespace)
      const watchdog = await call(server, member, 'GET', `${NS}/OS::Compute::Watchdog`)
      assert.equal(watchdog.status, 200)
      assert.equal(watchdog.body.protected, true)
      assert.deepEqual(watchdog.body.properties.watchdog_action.enum, ['disabled', 'reset', 'poweroff', 'pause', 'none'])
      assert.ok(watchdog.body.resource_type_associations.some((a: { name: string; prefix: string }) => a.name === 'OS::Nova::Flavor' && a.prefix === 'hw:'))
      const quota = await call(server, member, 'GET', `${NS}/OS::Compute::Quota/objects`)
      assert.ok(quota.body.objects.length >= 3)
      const types = (await call(server, member, 'GET', '/image/v2/metadefs/resource_types')).body.resource_types.map((t: { name: string }) => t.name)
      assert.ok(types.includes('OS::Glance::Image') && types.includes('OS::Nova::Flavor'))
      const byType = await call(server, member, 'GET', `${NS}?resource_types=OS::Nova::Flavor`)
      assert.ok(byType.body.namespaces.length > 0 && byType.body.namespaces.length < names.length)
      // Loading again (another start) changes nothing.
      await ensureStandardNamespaces(server.deps.store.db)
      assert.equal((await call(server, member, 'GET', NS)).body.namespaces.length, names.length)
      // Replicas starting together on an empty database all load them, and each namespace comes once, whole.
      const db = server.deps.store.db
      for (const table of ['metadef_objects', 'metadef_properties', 'metadef_tags', 'metadef_namespace_resource_types', 'metadef_namespaces'] as const) {
        await db.deleteFrom(table).execute()
      }
      await Promise.all([1, 2, 3].map(() => ensureStandardNamespaces(db)))
      const reloaded = await call(server, member, 'GET', NS)
      assert.deepEqual(reloaded.body.namespaces.map((n: { namespace: string }) => n.namespace).sort(), [...names].sort())
      assert.deepEqual((await call(server, member, 'GET', `${NS}/OS::Compute::Watchdog`)).body.properties, watchdog.body.properties)
      for (const which of ['namespace', 'namespaces', 'resource_type', 'resource_types', 'object', 'objects', 'property', 'properties', 'tag', 'tags']) {
        assert.equal((await call(server, member, 'GET', `/image/v2/schemas/metadefs/${which}`)).status, 200)
      }
      assert.equal((await call(server, member, 'GET', '/image/v2/schemas/metadefs/resource_type')).body.name, 'resource_type_association')
    })

    it('lets an admin manage a namespace and its objects, properties, tags and resource types', async () => {
      const created = await call(server, admin, 'POST', NS, { namespace: 'Test::Ns', display_name: 'Test', description: 'd', visibility: 'public', protected: true, resource_type_associations: [{ name: 'OS::Glance::Image', prefix: 'x_' }] })
      assert.equal(created.status, 201)
      assert.equal(created.body.self, '/v2/metadefs/namespaces/Test::Ns')
      assert.equal(created.body.owner, admin.projectId)
      const protectedDelete = await call(server, admin, 'DELETE', `${NS}/Test::Ns`)
      assert.equal(protectedDelete.status, 403)
      assert.ok(protectedDelete.body.message)

      const object = await call(server, admin, 'POST', `${NS}/Test::Ns/objects`, { name: 'obj', description: 'o', required: ['a'], properties: { a: { title: 'A', type: 'string' } } })
      assert.equal(object.status, 201)
      assert.equal(object.body.self, '/v2/metadefs/namespaces/Test::Ns/objects/obj')
      assert.equal((await call(server, admin, 'POST', `${NS}/Test::Ns/objects`, { name: 'obj' })).status, 409)
      const renamed = await call(server, admin, 'PUT', `${NS}/Test::Ns/objects/obj`, { name: 'obj2', description: 'p' })
      assert.equal(renamed.body.name, 'obj2')
      assert.equal((await call(server, admin, 'GET', `${NS}/Test::Ns/objects/obj`)).status, 404)

      const property = await call(server, admin, 'POST', `${NS}/Test::Ns/properties`, { name: 'OS::Glance::Image', title: 'T', type: 'string', enum: ['kvm', 'qemu'] })
      assert.equal(property.status, 201)
      assert.equal((await call(server, admin, 'GET', `${NS}/Test::Ns/properties/OS::Glance::Image`)).body.name, 'OS::Glance::Image')
      const retitled = await call(server, admin, 'PUT', `${NS}/Test::Ns/properties/OS::Glance::Image`, { name: 'OS::Glance::Image', title: 'T2', type: 'string' })
      assert.equal(retitled.body.title, 'T2')

      const tags = await call(server, admin, 'POST', `${NS}/Test::Ns/tags`, { tags: [{ name: 't1' }, { name: 't2' }] })
      assert.equal(tags.status, 201)
      assert.equal((await call(server, admin, 'POST', `${NS}/Test::Ns/tags`, { tags: [{ name: 't3' }] }, { 'x-openstack-append': 'true' })).body.tags.length, 3)
      assert.equal((await call(server, admin, 'POST', `${NS}/Test::Ns/tags/t4`)).status, 201)
      assert.equal((await call(server, admin, 'PUT', `${NS}/Test::Ns/tags/t4`, { name: 't5' })).body.name, 't5')
      assert.equal((await call(server, admin, 'DELETE', `${NS}/Test::Ns/tags/t5`)).status, 204)

      const shown = await call(server, admin, 'GET', `${NS}/Test::Ns`)
      assert.deepEqual(Object.keys(shown.body.properties), ['OS::Glance::Image'])
      assert.deepEqual(shown.body.objects.map((o: { name: string }) => o.name), ['obj2'])
      assert.equal(shown.body.tags.length, 3)

      assert.equal((await call(server, admin, 'POST', `${NS}/Test::Ns/resource_types`, { name: 'OS::Nova::Flavor', prefix: 'y:' })).status, 201)
      assert.equal((await call(server, admin, 'POST', `${NS}/Test::Ns/resource_types`, { name: 'OS::Nova::Flavor' })).status, 409)
      assert.equal((await call(server, admin, 'GET', `${NS}/Test::Ns/resource_types`)).body.resource_type_associations.length, 2)
      assert.equal((await call(server, admin, 'DELETE', `${NS}/Test::Ns/resource_types/OS::Nova::Flavor`)).status, 204)
      assert.equal((await call(server, admin, 'DELETE', `${NS}/Test::Ns/resource_types/OS::Nova::Flavor`)).status, 404)

      for (const kind of ['objects', 'properties', 'tags']) assert.equal((await call(server, admin, 'DELETE', `${NS}/Test::Ns/${kind}`)).status, 204)
      const emptied = (await call(server, admin, 'GET', `${NS}/Test::Ns`)).body
      assert.equal(emptied.properties ?? emptied.objects ?? emptied.tags, undefined)
      const updated = await call(server, admin, 'PUT', `${NS}/Test::Ns`, { namespace: 'Test::Ns', visibility: 'private', protected: false, description: 'e' })
      assert.equal(updated.status, 200)
      assert.deepEqual([updated.body.visibility, updated.body.protected], ['private', false])
      assert.equal((await call(server, admin, 'DELETE', `${NS}/Test::Ns`)).status, 204)
      assert.equal((await call(server, admin, 'GET', `${NS}/Test::Ns`)).status, 404)
      assert.equal((await server.deps.store.db.selectFrom('metadef_properties').selectAll().execute()).filter((p) => p.name === 'OS::Glance::Image').length, 0)
    })

    it('keeps private namespaces to their project and writes to admins, refusing bad bodies without a change', async () => {
      await call(server, admin, 'POST', NS, { namespace: 'Private::Ns', visibility: 'private' })
      assert.equal((await call(server, member, 'GET', `${NS}/Private::Ns`)).status, 404)
      assert.equal((await call(server, member, 'GET', `${NS}/Private::Ns/objects`)).status, 404)
      // Writes too: a 403 would tell the namespace exists.
      assert.equal((await call(server, member, 'DELETE', `${NS}/Private::Ns`)).status, 404)
      assert.equal((await call(server, member, 'POST', `${NS}/Private::Ns/tags/x`)).status, 404)
      assert.ok(!(await call(server, member, 'GET', NS)).body.namespaces.some((n: { namespace: string }) => n.namespace === 'Private::Ns'))
      assert.equal((await call(server, admin, 'GET', `${NS}/Private::Ns`)).status, 200)

      assert.equal((await call(server, member, 'POST', NS, { namespace: 'Member::Ns' })).status, 403)
      assert.equal((await call(server, member, 'POST', `${NS}/OS::Compute::Watchdog/tags`, { tags: [{ name: 'x' }] })).status, 403)
      assert.equal((await call(server, member, 'DELETE', `${NS}/OS::Compute::Hypervisor/properties/vm_mode`)).status, 403)
      assert.equal((await call(server, undefined, 'GET', NS)).status, 401)

      const bad: [string, string, unknown][] = [
        ['POST', NS, { namespace: '' }],
        ['POST', NS, { namespace: 'X', visibility: 'shared' }],
        ['POST', NS, { namespace: 'X', unknown: 1 }],
        ['POST', `${NS}/Private::Ns/properties`, { name: 'p', type: 'string' }],
        ['POST', `${NS}/Private::Ns/properties`, { name: 'p', title: 'P', type: 'color' }],
        ['POST', `${NS}/Private::Ns/objects`, { description: 'no name' }],
        ['POST', `${NS}/Private::Ns/tags`, { tags: [{}] }],
        ['POST', `${NS}/Private::Ns/resource_types`, { prefix: 'x' }],
      ]
      for (const [method, path, body] of bad) {
        const reply = await call(server, admin, method, path, body)
        assert.equal(reply.status, 400, `${method} ${path} ${JSON.stringify(body)}`)
        assert.ok(reply.body.message)
      }
      assert.equal((await call(server, admin, 'POST', `${NS}/Private::Ns/tags`, { tags: [{ name: 'a' }, { name: 'a' }] })).status, 409)
      assert.equal((await call(server, admin, 'POST', NS, { namespace: 'OS::Compute::Watchdog' })).status, 409)
      const left = await call(server, admin, 'GET', `${NS}/Private::Ns`)
      assert.equal(left.body.properties ?? left.body.objects ?? left.body.tags, undefined)
      assert.equal((await call(server, admin, 'GET', `${NS}/X`)).status, 404)
    })
  })
}
