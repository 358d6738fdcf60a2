/**
 * Compute answers Tempest's interop tests hold pcc to, each checked here without Tempest: the image proxy
 * (`/images`, 2.1–2.35), generated x509 key pairs, and accessIPv6 in Nova's canonical form.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto'
import { ACTIVE, call, computeTestbed, createBody, IMAGE, setState, type ComputeTestbed } from './helpers.js'

describe('compute answers as Nova gives them', () => {
  let tb: ComputeTestbed
  before(async () => {
    tb = await computeTestbed()
  })
  after(() => tb.close())

  /** An image of the member's project with some properties, made through the image service's API. */
  async function memberImage(name: string, properties: Record<string, string> = {}): Promise<string> {
    const res = await fetch(`${tb.server.url}/image/v2/images`, {
      method: 'POST',
      headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' },
      body: JSON.stringify({ name, disk_format: 'qcow2', container_format: 'bare', min_disk: 1, ...properties }),
    })
    assert.equal(res.status, 201)
    return ((await res.json()) as { id: string }).id
  }

  describe('image proxy', () => {
    it('shows an image in Nova\'s shape, with its properties as metadata and its server', async () => {
      const id = await memberImage('snap', { instance_uuid: '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa', image_type: 'snapshot' })
      const res = await call(tb, tb.member, 'GET', `/images/${id}`)
      assert.equal(res.status, 200)
      const image = res.body.image
      assert.deepEqual(Object.keys(image).sort(), ['OS-EXT-IMG-SIZE:size', 'created', 'id', 'links', 'metadata', 'minDisk', 'minRam', 'name', 'progress', 'server', 'status', 'updated'])
      assert.equal(image.status, 'SAVING', 'queued in Glance')
      assert.equal(image.progress, 25)
      assert.equal(image.minDisk, 1)
      assert.deepEqual(image.metadata, { instance_uuid: '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa', image_type: 'snapshot' })
      assert.equal(image.server.id, '9b2f4a04-9f4e-4a6b-a5c3-46d2b7f2c1aa')
      assert.match(image.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      assert.deepEqual(image.links.map((l: { rel: string }) => l.rel), ['self', 'bookmark', 'alternate'])
      const active = (await call(tb, tb.member, 'GET', `/images/${IMAGE}`)).body.image
      assert.equal(active.status, 'ACTIVE')
      assert.equal(active.progress, 100)
      assert.equal('server' in active, false)
    })

    it('lists summaries and details with Nova\'s filters and pages', async () => {
      const a = await memberImage('filter-a', { image_type: 'filter-type' })
      const b = await memberImage('filter-b')
      const summary = (await call(tb, tb.member, 'GET', '/images')).body.images
      assert.ok(summary.some((i: { id: string }) => i.id === a))
      for (const i of summary) assert.deepEqual(Object.keys(i).sort(), ['id', 'links', 'name'])
      const ids = async (query: string) => (await call(tb, tb.member, 'GET', `/images/detail?${query}`)).body.images.map((i: { id: string }) => i.id)
      assert.deepEqual(await ids('name=filter-b'), [b])
      assert.deepEqual(await ids('type=filter-type'), [a])
      assert.ok((await ids('status=ACTIVE')).includes(IMAGE))
      assert.ok(!(await ids('status=ACTIVE')).includes(a))
      assert.ok((await ids('minDisk=1')).includes(a))
      assert.ok(!(await ids('minDisk=1')).includes(IMAGE))
      const first = await call(tb, tb.member, 'GET', '/images?limit=1')
      assert.equal(first.body.images.length, 1)
      const next = first.body.images_links.find((l: { rel: string }) => l.rel === 'next').href
      assert.match(next, /marker=/)
      const second = await call(tb, tb.member, 'GET', next.slice(next.indexOf('/images')))
      assert.notEqual(second.body.images[0].id, first.body.images[0].id)
      assert.equal((await call(tb, tb.member, 'GET', '/images?marker=nope')).status, 400)
    })

    it('sets, replaces, shows and deletes image metadata', async () => {
      const id = await memberImage('meta', { a: '1' })
      assert.deepEqual((await call(tb, tb.member, 'POST', `/images/${id}/metadata`, { metadata: { b: '2' } })).body, { metadata: { a: '1', b: '2' } })
      assert.deepEqual((await call(tb, tb.member, 'PUT', `/images/${id}/metadata`, { metadata: { c: '3' } })).body, { metadata: { c: '3' } })
      assert.deepEqual((await call(tb, tb.member, 'PUT', `/images/${id}/metadata/d`, { meta: { d: '4' } })).body, { meta: { d: '4' } })
      assert.equal((await call(tb, tb.member, 'PUT', `/images/${id}/metadata/d`, { meta: { e: '5' } })).status, 400, 'URI and body keys differ')
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata/d`)).body, { meta: { d: '4' } })
      assert.equal((await call(tb, tb.member, 'DELETE', `/images/${id}/metadata/d`)).status, 204)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}/metadata/d`)).status, 404)
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata`)).body, { metadata: { c: '3' } })
      const tooMany = Object.fromEntries(Array.from({ length: 129 }, (_, n) => [`k${n}`, 'v']))
      assert.equal((await call(tb, tb.member, 'POST', `/images/${id}/metadata`, { metadata: tooMany })).status, 403, 'over the metadata_items quota')
      assert.deepEqual((await call(tb, tb.member, 'GET', `/images/${id}/metadata`)).body, { metadata: { c: '3' } })
    })

    it('deletes an image; another project\'s private image is a 404; the proxy is gone from 2.36', async () => {
      const id = await memberImage('to-delete')
      assert.equal((await call(tb, tb.other, 'GET', `/images/${id}`)).status, 404)
      assert.equal((await call(tb, tb.other, 'DELETE', `/images/${id}`)).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}`, undefined, '2.36')).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', '/images', undefined, '2.36')).status, 404)
      assert.equal((await call(tb, tb.member, 'GET', `/images/${id}`, undefined, '2.35')).status, 200)
      assert.equal((await call(tb, tb.member, 'DELETE', `/images/${id}`)).status, 204)
      const gone = await call(tb, tb.member, 'GET', `/images/${id}`)
      assert.equal(gone.status, 404)
      assert.equal(gone.body.itemNotFound.message, 'Image not found.')
    })
  })

  it('generates an x509 key pair: a self-signed certificate for the user and its private key', async () => {
    const res = await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'winrm', type: 'x509' } }, '2.2')
    assert.equal(res.status, 201, JSON.stringify(res.body))
    const k = res.body.keypair
    assert.equal(k.type, 'x509')
    const cert = new X509Certificate(k.public_key)
    assert.equal(cert.subject, `CN=${tb.member.userId}`)
    assert.ok(cert.checkPrivateKey(createPrivateKey(k.private_key)), 'the private key is the certificate\'s')
    assert.equal(k.fingerprint, [...createHash('sha1').update(cert.raw).digest()].map((b) => b.toString(16).padStart(2, '0')).join(':'))
    const shown = (await call(tb, tb.member, 'GET', '/os-keypairs/winrm', undefined, '2.2')).body.keypair
    assert.equal(shown.public_key, k.public_key)
    assert.equal('private_key' in shown, false)
  })

  it('keeps accessIPv6 in its canonical form, on create, update and rebuild', async () => {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('v6', { accessIPv6: '0000:0000:0000:0000:0000:babe:220.12.22.2' }), '2.37')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    const id = created.body.server.id
    const show = async () => (await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.accessIPv6
    assert.equal(await show(), '::babe:dc0c:1602')
    await call(tb, tb.member, 'PUT', `/servers/${id}`, { server: { accessIPv6: '2001:DB8:0:0:0:0:0:1' } })
    assert.equal(await show(), '2001:db8::1')
    await setState(tb, id, ACTIVE)
    const rebuilt = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { rebuild: { imageRef: IMAGE, accessIPv6: 'FE80:0000::0001' } })
    assert.equal(rebuilt.status, 202, JSON.stringify(rebuilt.body))
    assert.equal(await show(), 'fe80::1')
  })
})
