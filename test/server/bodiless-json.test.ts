/**
 * Bodiless requests that say `Content-Type: application/json` (Tempest and many HTTP helpers set it on every
 * request): on every API family an operation that takes no body succeeds, an optional body counts as absent, and
 * an operation that needs a body answers 400 in the family's error shape and changes nothing.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { familyShape } from './family-shapes.js'

const JSON_TYPE = { 'content-type': 'application/json' }

describe('bodiless requests with a JSON content type', () => {
  let server: TestServer
  let token: string
  before(async () => {
    server = await startTestServer()
    token = await issueToken()
  })
  after(() => server.close())

  const issueToken = async () => (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token

  /** A request as Tempest sends it: the JSON content type always, a body only when there is one. */
  async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, ...JSON_TYPE, ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> }
  }

  /** Each case makes what it needs with a body, then sends the bodiless operation and checks its effect. */
  const cases: { family: string; operation: string; run: () => Promise<void> }[] = [
    {
      family: 'identity',
      operation: 'PUT a role grant',
      run: async () => {
        const user = await call('POST', '/identity/v3/users', { user: { name: 'grantee', domain_id: 'default' } })
        assert.equal(user.status, 201)
        const roles = await call('GET', '/identity/v3/roles?name=member')
        const roleId = (roles.body.roles as { id: string }[])[0].id
        const grant = `/identity/v3/projects/${server.bootstrap.adminProjectId}/users/${(user.body.user as { id: string }).id}/roles/${roleId}`
        assert.equal((await call('PUT', grant)).status, 204)
        assert.equal((await call('HEAD', grant)).status, 204)
      },
    },
    {
      family: 'identity',
      operation: 'DELETE a token (revocation)',
      run: async () => {
        const subject = await issueToken()
        assert.equal((await call('DELETE', '/identity/v3/auth/tokens', undefined, { 'x-subject-token': subject })).status, 204)
        assert.equal((await call('GET', '/identity/v3/auth/tokens', undefined, { 'x-subject-token': subject })).status, 404)
      },
    },
    {
      family: 'compute',
      operation: 'DELETE a key pair',
      run: async () => {
        assert.equal((await call('POST', '/compute/v2.1/os-keypairs', { keypair: { name: 'bodiless' } })).status, 200)
        assert.equal((await call('DELETE', '/compute/v2.1/os-keypairs/bodiless')).status, 202)
        assert.equal((await call('GET', '/compute/v2.1/os-keypairs/bodiless')).status, 404)
      },
    },
    {
      family: 'network',
      operation: 'DELETE a network',
      run: async () => {
        const net = await call('POST', '/network/v2.0/networks', { network: { name: 'bodiless' } })
        assert.equal(net.status, 201)
        const path = `/network/v2.0/networks/${(net.body.network as { id: string }).id}`
        assert.equal((await call('DELETE', path)).status, 204)
        assert.equal((await call('GET', path)).status, 404)
      },
    },
    {
      family: 'image',
      operation: 'DELETE an image',
      run: async () => {
        const image = await call('POST', '/image/v2/images', { name: 'bodiless', disk_format: 'raw', container_format: 'bare' })
        assert.equal(image.status, 201)
        const path = `/image/v2/images/${image.body.id as string}`
        assert.equal((await call('DELETE', path)).status, 204)
        assert.equal((await call('GET', path)).status, 404)
      },
    },
    {
      family: 'volume',
      operation: 'DELETE a volume type',
      run: async () => {
        const type = await call('POST', '/volume/v3/types', { volume_type: { name: 'bodiless' } })
        assert.equal(type.status, 200)
        const path = `/volume/v3/types/${(type.body.volume_type as { id: string }).id}`
        assert.equal((await call('DELETE', path)).status, 202)
        assert.equal((await call('GET', path)).status, 404)
      },
    },
    {
      family: 'resmgr',
      operation: 'POST a registration token (its body is optional)',
      run: async () => {
        const created = await call('POST', '/resmgr/v1/registration-tokens')
        assert.equal(created.status, 201, JSON.stringify(created.body))
        assert.match(String(created.body.token), /^pccr_/)
      },
    },
    {
      family: 'idp',
      operation: 'POST to the token endpoint (read as an empty form)',
      run: async () => {
        // The provider gets as far as the (missing) client credentials: the body was read, as no fields.
        const res = await call('POST', '/idp/token')
        assert.equal(res.status, 401, JSON.stringify(res.body))
        assert.equal(res.body.error, 'invalid_client')
      },
    },
  ]
  for (const { family, operation, run } of cases) it(`${family}: ${operation}`, run)

  /** Operations that need a body, and the listing that shows nothing was created. */
  const needsBody: { family: string; path: string; list: string; items: (body: Record<string, unknown>) => unknown[] }[] = [
    { family: 'identity', path: '/identity/v3/projects', list: '/identity/v3/projects', items: (b) => b.projects as unknown[] },
    { family: 'compute', path: '/compute/v2.1/os-keypairs', list: '/compute/v2.1/os-keypairs', items: (b) => b.keypairs as unknown[] },
    { family: 'network', path: '/network/v2.0/networks', list: '/network/v2.0/networks', items: (b) => b.networks as unknown[] },
    { family: 'image', path: '/image/v2/images', list: '/image/v2/images', items: (b) => b.images as unknown[] },
    { family: 'volume', path: '/volume/v3/volumes', list: '/volume/v3/volumes', items: (b) => b.volumes as unknown[] },
    { family: 'resmgr', path: '/resmgr/v1/hosts/register', list: '/resmgr/v1/hosts', items: (b) => b as unknown as unknown[] },
  ]
  for (const { family, path, list, items } of needsBody) {
    it(`${family}: a bodiless POST ${path}, which needs a body, is a 400 in the family's shape and creates nothing`, async () => {
      const before = items((await call('GET', list)).body)
      const res = await call('POST', path)
      assert.equal(res.status, 400, JSON.stringify(res.body))
      familyShape(family).check(res.body, 400)
      assert.deepEqual(items((await call('GET', list)).body), before)
    })
  }
})
