import { test } from 'node:test'
import assert from 'node:assert/strict'
import { COMPUTE_VERSIONS, GATES, MAX_VERSION, versionNumber } from '../../src/contracts/compute/versions.js'
import { entriesOf } from '../../src/contracts/compute/fields.js'
import { serverFields } from '../../src/contracts/compute/server.fields.js'
import { flavorFields } from '../../src/contracts/compute/flavor.fields.js'
import { keypairFields } from '../../src/contracts/compute/keypair.fields.js'
import { absoluteLimitFields, quotaSetFields } from '../../src/contracts/compute/quota.fields.js'
import { serverGroupFields } from '../../src/contracts/compute/server-group.fields.js'
import { volumeAttachmentFields } from '../../src/contracts/compute/volume-attachment.fields.js'
import { call, computeTestbed } from './helpers.js'

test('the microversion registry is contiguous from 2.1 to 2.96 and every gate names a listed version', () => {
  COMPUTE_VERSIONS.forEach(([v], i) => assert.equal(v, `2.${i + 1}`))
  assert.equal(COMPUTE_VERSIONS[COMPUTE_VERSIONS.length - 1][0], MAX_VERSION)
  const listed = new Set<string>(COMPUTE_VERSIONS.map(([v]) => v))
  for (const [gate, v] of Object.entries(GATES)) assert.ok(listed.has(v), `gate ${gate} names ${v}`)
})

test('no field table has two entries for one key that overlap in version and view', () => {
  for (const table of [serverFields, flavorFields, keypairFields, quotaSetFields, absoluteLimitFields, serverGroupFields, volumeAttachmentFields] as const) {
    const entries = entriesOf(table as never) as [string, { since?: string; until?: string; views: readonly string[]; admin?: boolean }][]
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) {
        const [ka, a] = entries[i]
        const [kb, b] = entries[j]
        if (ka !== kb) continue
        const from = Math.max(versionNumber(a.since ?? '2.1'), versionNumber(b.since ?? '2.1'))
        const to = Math.min(versionNumber(a.until ?? '2.97'), versionNumber(b.until ?? '2.97'))
        const sharedView = a.views.some((v) => b.views.includes(v))
        assert.ok(!(sharedView && from < to && !!a.admin === !!b.admin), `${ka}: overlapping entries`)
      }
    }
  }
})

test('version documents, negotiation and echoed headers', async () => {
  const tb = await computeTestbed()
  try {
    const root = await fetch(`${tb.server.url}/compute/`)
    assert.equal(root.status, 200)
    const doc = (await root.json()) as { versions: { id: string; status: string; version: string; min_version: string; links: { rel: string; href: string }[] }[] }
    assert.deepEqual(doc.versions.map((v) => v.id), ['v2.0', 'v2.1'])
    assert.equal(doc.versions[1].status, 'CURRENT')
    assert.equal(doc.versions[1].version, '2.96')
    assert.equal(doc.versions[1].min_version, '2.1')
    assert.equal(root.headers.get('openstack-api-version'), null)

    for (const path of ['/compute/v2.1', '/compute/v2.1/']) {
      const r = await fetch(`${tb.server.url}${path}`)
      assert.equal(r.status, 200, path)
      const body = (await r.json()) as { version: { id: string; links: { rel: string; href: string }[] } }
      assert.equal(body.version.id, 'v2.1')
      assert.equal(body.version.links.find((l) => l.rel === 'self')!.href, doc.versions[1].links[0].href)
      assert.equal(r.headers.get('openstack-api-version'), 'compute 2.1')
      assert.ok(r.headers.get('x-compute-request-id')?.startsWith('req-'))
    }

    const cases: [Record<string, string>, number, string?][] = [
      [{}, 200, '2.1'],
      [{ 'openstack-api-version': 'compute 2.60' }, 200, '2.60'],
      [{ 'openstack-api-version': 'compute latest' }, 200, '2.96'],
      [{ 'x-openstack-nova-api-version': '2.47' }, 200, '2.47'],
      [{ 'cloud-api-version': 'compute 2.10', 'openstack-api-version': 'compute 2.20' }, 200, '2.10'],
      [{ 'openstack-api-version': 'compute 2.5', 'x-openstack-nova-api-version': '2.40' }, 200, '2.5'],
      [{ 'openstack-api-version': 'volume 3.0, compute 2.30' }, 200, '2.30'],
      [{ 'openstack-api-version': 'compute 2.97' }, 406],
      [{ 'openstack-api-version': 'compute 2.0' }, 406],
      [{ 'openstack-api-version': 'compute 3.0' }, 406],
      [{ 'openstack-api-version': 'compute 2.01' }, 400],
      [{ 'openstack-api-version': 'compute LATEST' }, 400],
      [{ 'x-openstack-nova-api-version': 'v2.1' }, 400],
      [{ 'cloud-api-version': 'compute 2.1.1' }, 400],
    ]
    for (const [headers, status, echoed] of cases) {
      const r = await fetch(`${tb.compute}/flavors`, { headers: { 'x-auth-token': tb.member.token, ...headers } })
      const body = (await r.json()) as Record<string, { code: number; message: string }>
      assert.equal(r.status, status, JSON.stringify(headers))
      if (echoed) {
        assert.equal(r.headers.get('openstack-api-version'), `compute ${echoed}`)
        assert.equal(r.headers.get('x-openstack-nova-api-version'), echoed)
        assert.equal(r.headers.get('cloud-api-version'), `compute ${echoed}`)
        assert.match(r.headers.get('vary') ?? '', /OpenStack-API-Version/)
        assert.match(r.headers.get('vary') ?? '', /X-OpenStack-Nova-API-Version/)
      } else if (status === 406) {
        assert.ok(body.computeFault, 'a 406 is a computeFault')
        assert.match(body.computeFault.message, /not supported by the API. Minimum is 2.1 and maximum is 2.96/)
      } else {
        assert.match(body.badRequest.message, /is of invalid format/)
      }
    }
  } finally {
    await tb.close()
  }
})

test('errors carry the request id and Nova fault keys; no token is 401', async () => {
  const tb = await computeTestbed()
  try {
    const r = await fetch(`${tb.compute}/servers`)
    assert.equal(r.status, 401)
    assert.ok(r.headers.get('x-compute-request-id'))
    const missing = await call(tb, tb.member, 'GET', '/servers/6c8a3c64-7a2c-4a57-8b39-ffffffffffff')
    assert.equal(missing.status, 404)
    assert.equal(missing.body.itemNotFound.code, 404)
    assert.ok(missing.headers.get('x-compute-request-id'))
    const byName = await call(tb, tb.member, 'GET', '/servers/not-a-uuid')
    assert.equal(byName.status, 404)
    const flavorByName = await call(tb, tb.member, 'GET', '/flavors/m1.tiny')
    assert.equal(flavorByName.status, 404)
    // Bodies are JSON whatever the Content-Type says, within Nova's accepted types.
    const body = JSON.stringify({ keypair: { name: 'plain' } })
    for (const type of ['text/plain', 'application/vnd.openstack.compute+json']) {
      const r = await fetch(`${tb.compute}/os-keypairs`, { method: 'POST', headers: { 'x-auth-token': tb.member.token, 'content-type': type }, body: body.replace('plain', type.length.toString()) })
      assert.equal(r.status, 200, type)
    }
    const garbage = await fetch(`${tb.compute}/os-keypairs`, { method: 'POST', headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/json' }, body: '{nope' })
    assert.equal(garbage.status, 400)
    assert.ok(((await garbage.json()) as Record<string, unknown>).badRequest)
    const xml = await fetch(`${tb.compute}/os-keypairs`, { method: 'POST', headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/xml' }, body: '<a/>' })
    assert.equal(xml.status, 415)
  } finally {
    await tb.close()
  }
})
