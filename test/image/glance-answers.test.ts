/**
 * Image API behaviour Tempest's tests hold pcc to, checked without Tempest: the draft-4 JSON-patch media type
 * (`application/openstack-images-v2.0-json-patch`, which Tempest's client sends), filtering lists by size, and an
 * admin giving an image to another project.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, projectSession, type Session } from './support.js'

const DRAFT4 = { 'content-type': 'application/openstack-images-v2.0-json-patch' }

describe('image API answers as Glance gives them', () => {
  let server: TestServer
  let alice: Session
  before(async () => {
    server = await startTestServer()
    alice = await projectSession(server)
  })
  after(() => server.close())

  const create = async (name: string) => (await call(server, alice, 'POST', '/image/v2/images', { name, disk_format: 'raw', container_format: 'bare' })).body

  it('applies a draft-4 patch ({"replace": "/name", "value": …}) as Glance does', async () => {
    const image = await create('before')
    const patched = await call(server, alice, 'PATCH', `/image/v2/images/${image.id}`, JSON.stringify([{ replace: '/name', value: 'after' }, { add: '/colour', value: 'blue' }]), DRAFT4)
    assert.equal(patched.status, 200, JSON.stringify(patched.body))
    assert.equal(patched.body.name, 'after')
    assert.equal(patched.body.colour, 'blue')
    const removed = await call(server, alice, 'PATCH', `/image/v2/images/${image.id}`, JSON.stringify([{ remove: '/colour' }]), DRAFT4)
    assert.equal(removed.body.colour, undefined)
    for (const bad of [[{ replace: '/name', add: '/name', value: 'x' }], [{ op: 'replace', path: '/name', value: 'x' }]]) {
      const res = await call(server, alice, 'PATCH', `/image/v2/images/${image.id}`, JSON.stringify(bad), DRAFT4)
      assert.equal(res.status, 400, `${JSON.stringify(bad)} is not a draft-4 operation`)
      assert.match(res.body.code, /^400 /)
    }
    assert.equal((await call(server, alice, 'GET', `/image/v2/images/${image.id}`)).body.name, 'after', 'refused patches changed nothing')
  })

  it('filters lists by size, as any core attribute', async () => {
    const small = await create('small')
    const big = await create('big')
    for (const [image, bytes] of [[small, 3], [big, 5]] as const) {
      const res = await call(server, alice, 'PUT', `/image/v2/images/${image.id}/file`, new Uint8Array(bytes), { 'content-type': 'application/octet-stream' })
      assert.equal(res.status, 204)
    }
    const named = async (query: string) => (await call(server, alice, 'GET', `/image/v2/images?${query}`)).body.images.map((i: { name: string }) => i.name).sort()
    assert.deepEqual(await named('size=5'), ['big'])
    assert.deepEqual(await named('size=4'), [])
    assert.deepEqual(await named('size_min=3&size_max=5&visibility=shared'), ['big', 'small'])
  })

  it('lets an admin give an image to another project; for the owner, owner stays read-only', async () => {
    const admin = await adminSession(server)
    const bob = await projectSession(server)
    const image = await create('given-away')
    const patch = (who: Session, value: string) => call(server, who, 'PATCH', `/image/v2/images/${image.id}`, JSON.stringify([{ op: 'replace', path: '/owner', value }]), { 'content-type': 'application/openstack-images-v2.1-json-patch' })
    assert.equal((await patch(alice, bob.projectId)).status, 403)
    const moved = await patch(admin, bob.projectId)
    assert.equal(moved.status, 200, JSON.stringify(moved.body))
    assert.equal(moved.body.owner, bob.projectId)
    assert.equal((await call(server, bob, 'GET', `/image/v2/images/${image.id}`)).body.owner, bob.projectId)
    assert.equal((await patch(admin, '')).status, 400)
  })
})
