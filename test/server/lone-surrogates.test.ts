/**
 * Lone UTF-16 surrogates (`"a\ud800b"`, as JSON.stringify writes such a string) have no UTF-8 form: compute,
 * network, identity and image used to answer 200/201 and store `a\ufffd\ufffd\ufffdb`. Each family now answers 400
 * in its own error shape and creates nothing, as Nova does; a surrogate pair written as escapes is still a name.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { FAMILY_SHAPES } from './family-shapes.js'

const LONE = 'a\ud800b'

describe('lone UTF-16 surrogates in names', () => {
  let server: TestServer
  let token: string
  before(async () => {
    server = await startTestServer()
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  })
  after(() => server.close())

  async function call(method: string, path: string, body?: string, contentType = 'application/json') {
    const res = await fetch(`${server.url}${path}`, { method, headers: { 'x-auth-token': token, 'content-type': contentType }, body })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> }
  }

  const cases = [
    { family: 'compute', create: '/compute/v2.1/os-server-groups', list: '/compute/v2.1/os-server-groups', body: (name: string) => ({ server_group: { name, policies: ['affinity'] } }) },
    { family: 'network', create: '/network/v2.0/networks', list: '/network/v2.0/networks', body: (name: string) => ({ network: { name } }) },
    { family: 'identity', create: '/identity/v3/projects', list: '/identity/v3/projects', body: (name: string) => ({ project: { name, domain_id: 'default' } }) },
    { family: 'image', create: '/image/v2/images', list: '/image/v2/images', body: (name: string) => ({ name, disk_format: 'raw', container_format: 'bare' }) },
  ]

  for (const c of cases) {
    it(`${c.family}: 400 in the family's shape, nothing created; an escaped pair is accepted`, async () => {
      const shape = FAMILY_SHAPES.find((s) => s.family === c.family)!
      const before = JSON.stringify((await call('GET', c.list)).body)
      const text = JSON.stringify(c.body(LONE))
      assert.match(text, /\\ud800/)
      const refused = await call('POST', c.create, text)
      assert.equal(refused.status, 400, JSON.stringify(refused.body))
      shape.check(refused.body, 400)
      assert.match(JSON.stringify(refused.body), /surrogate/)
      assert.equal(JSON.stringify((await call('GET', c.list)).body), before)
      // A lone low surrogate and one in a key are refused too.
      assert.equal((await call('POST', c.create, JSON.stringify(c.body('x\udc00')))).status, 400)
      // A pair written as escapes is one character (U+1F600) and round-trips.
      const pair = JSON.stringify(c.body(`pair-${c.family}-PAIR`)).replace('PAIR', '\\ud83d\\ude00')
      const created = await call('POST', c.create, pair)
      assert.ok(created.status === 200 || created.status === 201, JSON.stringify(created.body))
      assert.ok(JSON.stringify((await call('GET', c.list)).body).includes(`pair-${c.family}-\u{1F600}`))
    })
  }

  it("compute reads Nova's media type and text/plain through the same check", async () => {
    for (const type of ['text/plain', 'application/vnd.openstack.compute+json']) {
      const r = await call('POST', '/compute/v2.1/os-server-groups', JSON.stringify({ server_group: { name: LONE, policies: ['affinity'] } }), type)
      assert.equal(r.status, 400, `${type}: ${JSON.stringify(r.body)}`)
    }
  })

  it('a key holding a lone surrogate is refused', async () => {
    const r = await call('POST', '/network/v2.0/networks', JSON.stringify({ network: { name: 'k', ['x\ud800']: 1 } }))
    assert.equal(r.status, 400)
  })
})
