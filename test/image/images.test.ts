import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { adminSession, call, eventually, projectSession, type Session } from './support.js'

const PATCH = { 'content-type': 'application/openstack-images-v2.1-json-patch' }

async function upload(server: TestServer, session: Session, id: string, data: Buffer) {
  const res = await fetch(`${server.url}/image/v2/images/${id}/file`, {
    method: 'PUT',
    headers: { 'x-auth-token': session.token, 'content-type': 'application/octet-stream' },
    body: data,
  })
  return { status: res.status, body: await res.text() }
}

for (const dialect of DIALECTS) {
  describe(`image service (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_IMAGE_MAX_BYTES: String(8 << 20) } })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('answers the version document at the root without a token', async () => {
      const res = await call(server, undefined, 'GET', '/image/')
      assert.equal(res.status, 300)
      assert.equal(res.body.versions[0].status, 'CURRENT')
      assert.match(res.body.versions[0].links[0].href, /\/image\/v2\/$/)
      const unauth = await call(server, undefined, 'GET', '/image/v2/images')
      assert.equal(unauth.status, 401)
      assert.equal(unauth.body.code, '401 Unauthorized')
    })

    it('has the default public qcow2 image, active, with matching checksums', async () => {
      const list = await call(server, alice, 'GET', `/image/v2/images?name=${defaultImageName()}`)
      assert.equal(list.status, 200)
      assert.equal(list.body.images.length, 1)
      const image = list.body.images[0]
      assert.equal(image.status, 'active')
      assert.equal(image.visibility, 'public')
      assert.equal(image.disk_format, 'qcow2')
      const res = await fetch(`${server.url}/image/v2/images/${image.id}/file`, { headers: { 'x-auth-token': alice.token } })
      const bytes = Buffer.from(await res.arrayBuffer())
      assert.equal(bytes.subarray(0, 4).toString('latin1'), 'QFI\xfb', 'qcow2 magic')
      assert.equal(bytes.readUInt32BE(4), 3, 'qcow2 version 3')
      assert.equal(bytes.length, image.size)
      assert.equal(createHash('md5').update(bytes).digest('hex'), image.checksum)
      assert.equal(createHash('sha512').update(bytes).digest('hex'), image.os_hash_value)
    })

    it('creates, uploads and downloads identical bytes with Glance checksums', async () => {
      const created = await call(server, alice, 'POST', '/image/v2/images', { name: 'data', disk_format: 'raw', container_format: 'bare', os_distro: 'ubuntu', tags: ['a'] })
      assert.equal(created.status, 201)
      assert.equal(created.body.status, 'queued')
      assert.equal(created.body.visibility, 'shared')
      assert.equal(created.body.os_distro, 'ubuntu', 'free-form properties sit at the top level')
      assert.equal(created.body.owner, alice.projectId)
      assert.match(created.headers.get('location')!, new RegExp(`/image/v2/images/${created.body.id}$`))
      const data = randomBytes(3 * 1024 * 1024 + 17)
      assert.equal((await upload(server, alice, created.body.id, data)).status, 204)
      const shown = await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)
      assert.equal(shown.body.status, 'active')
      assert.equal(shown.body.size, data.length)
      assert.equal(shown.body.checksum, createHash('md5').update(data).digest('hex'))
      assert.equal(shown.body.os_hash_algo, 'sha512')
      assert.equal(shown.body.os_hash_value, createHash('sha512').update(data).digest('hex'))
      const res = await fetch(`${server.url}/image/v2/images/${created.body.id}/file`, { headers: { 'x-auth-token': alice.token } })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-md5'), shown.body.checksum)
      assert.equal(res.headers.get('content-type'), 'application/octet-stream')
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(data))
      // A second upload to an active image is refused and leaves the bytes alone.
      assert.equal((await upload(server, alice, created.body.id, Buffer.from('other'))).status, 409)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)).body.checksum, shown.body.checksum)
    })

    it('answers 204 for the file of an image without data, and refuses uploads before formats are set', async () => {
      const created = await call(server, alice, 'POST', '/image/v2/images', { name: 'empty' })
      const res = await fetch(`${server.url}/image/v2/images/${created.body.id}/file`, { headers: { 'x-auth-token': alice.token } })
      assert.equal(res.status, 204)
      const up = await upload(server, alice, created.body.id, Buffer.from('abc'))
      assert.equal(up.status, 400)
      assert.match(JSON.parse(up.body).message, /disk_format, container_format must be set/)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)).body.status, 'queued')
    })

    it('kills an image whose upload passes the size limit, keeping no bytes', async () => {
      const created = await call(server, alice, 'POST', '/image/v2/images', { name: 'big', disk_format: 'raw', container_format: 'bare' })
      const up = await upload(server, alice, created.body.id, Buffer.alloc(9 << 20, 1))
      assert.equal(up.status, 413)
      const shown = await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)
      assert.equal(shown.body.status, 'killed')
      assert.equal(shown.body.size, null)
      assert.equal(await server.deps.blobs.exists(`images/${created.body.id}`), false)
    })

    it('kills an image whose client goes away mid-upload', async () => {
      const created = await call(server, alice, 'POST', '/image/v2/images', { name: 'cut', disk_format: 'raw', container_format: 'bare' })
      const req = request(`${server.url}/image/v2/images/${created.body.id}/file`, {
        method: 'PUT',
        headers: { 'x-auth-token': alice.token, 'content-type': 'application/octet-stream', 'content-length': String(4 << 20) },
      })
      req.on('error', () => {})
      req.write(Buffer.alloc(1 << 20, 2))
      await eventually(async () => (await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)).body.status === 'saving', 10_000, 'saving')
      req.destroy()
      await eventually(async () => (await call(server, alice, 'GET', `/image/v2/images/${created.body.id}`)).body.status === 'killed', 10_000, 'killed')
      assert.equal(await server.deps.blobs.exists(`images/${created.body.id}`), false)
    })

    it('rejects bad formats, read-only attributes and bad values in Glance shape, creating nothing', async () => {
      const before = (await call(server, alice, 'GET', '/image/v2/images?limit=1000')).body.images.length
      const cases: [Record<string, unknown>, number, RegExp][] = [
        [{ name: 'x', disk_format: 'floppy' }, 400, /disk_format/],
        [{ name: 'x', container_format: 'zip' }, 400, /container_format/],
        [{ name: 'x', visibility: 'everyone' }, 400, /visibility/],
        [{ name: 'x', status: 'active' }, 403, /'status' is read-only/],
        [{ name: 'x', size: 5 }, 403, /read-only/],
        [{ name: 'x', min_disk: -1 }, 400, /min_disk/],
        [{ name: 'x', id: 'not-a-uuid' }, 400, /id/],
      ]
      for (const [body, status, message] of cases) {
        const res = await call(server, alice, 'POST', '/image/v2/images', body)
        assert.equal(res.status, status, JSON.stringify(body))
        assert.match(res.body.message, message)
        assert.equal(res.body.title, status === 400 ? 'Bad Request' : 'Forbidden')
      }
      // Publicizing needs admin.
      assert.equal((await call(server, alice, 'POST', '/image/v2/images', { name: 'pub', visibility: 'public' })).status, 403)
      assert.equal((await call(server, alice, 'GET', '/image/v2/images?limit=1000')).body.images.length, before)
    })

    it('updates with Glance JSON patch, all or nothing', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 'p', disk_format: 'qcow2', container_format: 'bare', keep: 'x', drop: 'y' })).body
      const ok = await call(
        server,
        alice,
        'PATCH',
        `/image/v2/images/${img.id}`,
        [
          { op: 'replace', path: '/name', value: 'p2' },
          { op: 'add', path: '/new_prop', value: 'v' },
          { op: 'remove', path: '/drop' },
          { op: 'replace', path: '/min_ram', value: 512 },
          { op: 'replace', path: '/tags', value: ['x', 'y'] },
        ],
        PATCH,
      )
      assert.equal(ok.status, 200)
      assert.equal(ok.body.name, 'p2')
      assert.equal(ok.body.new_prop, 'v')
      assert.equal(ok.body.drop, undefined)
      assert.equal(ok.body.keep, 'x')
      assert.equal(ok.body.min_ram, 512)
      assert.deepEqual(ok.body.tags, ['x', 'y'])
      const bad = await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/name', value: 'p3' }, { op: 'replace', path: '/disk_format', value: 'nope' }], PATCH)
      assert.equal(bad.status, 400)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).body.name, 'p2', 'nothing applied')
      assert.equal((await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/status', value: 'active' }], PATCH)).status, 403)
      assert.equal((await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'remove', path: '/missing' }], PATCH)).status, 409)
      assert.equal((await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/name', value: 'x' }])).status, 415)
      assert.equal((await call(server, bob, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/name', value: 'x' }], PATCH)).status, 404)
    })

    it('lets admins, and only admins, create an image for another project', async () => {
      const forAlice = await call(server, admin, 'POST', '/image/v2/images', { name: 'given', owner: alice.projectId, visibility: 'private' })
      assert.equal(forAlice.status, 201)
      assert.equal(forAlice.body.owner, alice.projectId)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${forAlice.body.id}`)).status, 200)
      assert.equal((await call(server, bob, 'POST', '/image/v2/images', { name: 'steal', owner: alice.projectId })).status, 403)
    })

    it('adds and removes tags', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 't' })).body
      assert.equal((await call(server, alice, 'PUT', `/image/v2/images/${img.id}/tags/blue`)).status, 204)
      assert.equal((await call(server, alice, 'PUT', `/image/v2/images/${img.id}/tags/blue`)).status, 204)
      assert.deepEqual((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).body.tags, ['blue'])
      const tagged = await call(server, alice, 'GET', '/image/v2/images?tag=blue')
      assert.deepEqual(tagged.body.images.map((i: { id: string }) => i.id), [img.id])
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${img.id}/tags/blue`)).status, 204)
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${img.id}/tags/blue`)).status, 404)
    })

    it('keeps private images to their project and shares through accepted members', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 'mine', visibility: 'private' })).body
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${img.id}`)).status, 404)
      assert.equal((await call(server, bob, 'DELETE', `/image/v2/images/${img.id}`)).status, 404)
      assert.equal((await call(server, alice, 'POST', `/image/v2/images/${img.id}/members`, { member: bob.projectId })).status, 403, 'only shared images have members')
      await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/visibility', value: 'shared' }], PATCH)
      const added = await call(server, alice, 'POST', `/image/v2/images/${img.id}/members`, { member: bob.projectId })
      assert.equal(added.status, 200)
      assert.equal(added.body.status, 'pending')
      // Pending: bob can see it by id but it is not in his default list.
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${img.id}`)).status, 200)
      const listed = async () => (await call(server, bob, 'GET', '/image/v2/images?limit=1000')).body.images.some((i: { id: string }) => i.id === img.id)
      assert.equal(await listed(), false)
      assert.equal((await call(server, alice, 'PUT', `/image/v2/images/${img.id}/members/${bob.projectId}`, { status: 'accepted' })).status, 403, 'only the consumer accepts')
      const accepted = await call(server, bob, 'PUT', `/image/v2/images/${img.id}/members/${bob.projectId}`, { status: 'accepted' })
      assert.equal(accepted.status, 200)
      assert.equal(await listed(), true)
      const members = await call(server, alice, 'GET', `/image/v2/images/${img.id}/members`)
      assert.deepEqual(members.body.members.map((m: { member_id: string; status: string }) => [m.member_id, m.status]), [[bob.projectId, 'accepted']])
      // Bob sees but cannot change it.
      assert.equal((await call(server, bob, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/name', value: 'x' }], PATCH)).status, 403)
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${img.id}/members/${bob.projectId}`)).status, 204)
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${img.id}`)).status, 404)
    })

    it('lists community images only when asked for', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 'comm', visibility: 'community' })).body
      assert.equal((await call(server, bob, 'GET', `/image/v2/images/${img.id}`)).status, 200)
      const ids = async (q: string) => (await call(server, bob, 'GET', `/image/v2/images?${q}`)).body.images.map((i: { id: string }) => i.id)
      assert.ok(!(await ids('limit=1000')).includes(img.id))
      assert.ok((await ids('visibility=community')).includes(img.id))
    })

    it('protects protected images and deletes the bytes of deleted ones', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 'prot', protected: true, disk_format: 'raw', container_format: 'bare' })).body
      await upload(server, alice, img.id, Buffer.from('bytes'))
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${img.id}`)).status, 403)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).status, 200)
      await call(server, alice, 'PATCH', `/image/v2/images/${img.id}`, [{ op: 'replace', path: '/protected', value: false }], PATCH)
      assert.equal((await call(server, alice, 'DELETE', `/image/v2/images/${img.id}`)).status, 204)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).status, 404)
      assert.equal(await server.deps.blobs.exists(`images/${img.id}`), false)
    })

    it('deactivates and reactivates (the owner\'s members and admins); deactivated data is for admins', async () => {
      const img = (await call(server, alice, 'POST', '/image/v2/images', { name: 'deact', disk_format: 'raw', container_format: 'bare' })).body
      await upload(server, alice, img.id, Buffer.from('0123456789'))
      assert.equal((await call(server, bob, 'POST', `/image/v2/images/${img.id}/actions/deactivate`)).status, 404, 'another project cannot see it')
      assert.equal((await call(server, alice, 'POST', `/image/v2/images/${img.id}/actions/deactivate`)).status, 204)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).body.status, 'deactivated')
      assert.equal((await fetch(`${server.url}/image/v2/images/${img.id}/file`, { headers: { 'x-auth-token': alice.token } })).status, 403)
      assert.equal((await fetch(`${server.url}/image/v2/images/${img.id}/file`, { headers: { 'x-auth-token': admin.token } })).status, 200)
      assert.equal((await call(server, admin, 'POST', `/image/v2/images/${img.id}/actions/reactivate`)).status, 204)
      assert.equal((await call(server, alice, 'GET', `/image/v2/images/${img.id}`)).body.status, 'active')
      const queued = (await call(server, alice, 'POST', '/image/v2/images', { name: 'q' })).body
      assert.equal((await call(server, admin, 'POST', `/image/v2/images/${queued.id}/actions/deactivate`)).status, 400)
    })

    it('filters, sorts and pages with a top-level next link', async () => {
      const carol = await projectSession(server)
      const names = ['e', 'b', 'd', 'a', 'c']
      for (const name of names) await call(server, carol, 'POST', '/image/v2/images', { name, disk_format: name === 'a' ? 'iso' : 'raw', owner_tag: 'x' })
      const seen: string[] = []
      let path: string | undefined = `/image/v2/images?owner=${carol.projectId}&sort_key=name&sort_dir=asc&limit=2`
      while (path) {
        const page: { body: { images: { name: string }[]; next?: string } } = await call(server, carol, 'GET', `/image${path.replace(/^\/image/, '')}`)
        seen.push(...page.body.images.map((i) => i.name))
        path = page.body.next
        if (path) assert.match(path, /^\/v2\/images\?.*marker=/)
      }
      assert.deepEqual(seen, ['a', 'b', 'c', 'd', 'e'])
      const desc = await call(server, carol, 'GET', `/image/v2/images?owner=${carol.projectId}&sort=name:desc`)
      assert.deepEqual(desc.body.images.map((i: { name: string }) => i.name), ['e', 'd', 'c', 'b', 'a'])
      const iso = await call(server, carol, 'GET', `/image/v2/images?owner=${carol.projectId}&disk_format=iso`)
      assert.deepEqual(iso.body.images.map((i: { name: string }) => i.name), ['a'])
      const byProp = await call(server, carol, 'GET', `/image/v2/images?owner_tag=x&name=in:a,b`)
      assert.deepEqual(byProp.body.images.map((i: { name: string }) => i.name).sort(), ['a', 'b'])
      assert.equal((await call(server, carol, 'GET', '/image/v2/images?sort_key=bogus')).status, 400)
      assert.equal((await call(server, carol, 'GET', '/image/v2/images?marker=00000000-0000-0000-0000-000000000000')).status, 400)
      assert.equal((await call(server, carol, 'GET', '/image/v2/images?limit=-1')).status, 400)
      // limit=0 is an empty page without a next link (issue 18: it was a 500).
      const none = await call(server, carol, 'GET', `/image/v2/images?owner=${carol.projectId}&limit=0`)
      assert.equal(none.status, 200)
      assert.deepEqual(none.body.images, [])
      assert.equal(none.body.next, undefined)
    })

    it('keeps one default image across restarts', async () => {
      const again = await startTestServer({ dialect, dataDir: server.dataDir, databaseUrl: server.config.databaseUrl || undefined, env: { PCC_LISTEN: '127.0.0.1:0' } })
      try {
        const rows = await again.deps.store.db.selectFrom('images').select('id').where('name', '=', defaultImageName()).execute()
        assert.equal(rows.length, 1)
        const types = await again.deps.store.db.selectFrom('volume_types').select('id').where('name', '=', '__DEFAULT__').execute()
        assert.equal(types.length, 1)
      } finally {
        await again.stop()
      }
    })

    it('serves the schemas clients read', async () => {
      const image = await call(server, alice, 'GET', '/image/v2/schemas/image')
      assert.equal(image.status, 200)
      assert.equal(image.body.name, 'image')
      assert.ok(image.body.properties.disk_format.enum.includes('qcow2'))
      assert.equal((await call(server, alice, 'GET', '/image/v2/schemas/images')).body.name, 'images')
      assert.equal((await call(server, alice, 'GET', '/image/v2/schemas/member')).body.name, 'member')
    })
  })
}
