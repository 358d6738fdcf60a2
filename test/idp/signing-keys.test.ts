/** Signing keys: rotation on schedule, retired keys kept for a token lifetime, one current key across processes. */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose'
import { SigningKeys } from '../../src/server/oidc/signing-keys.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, kubernetesSecret, tokenCall } from './helpers.js'

async function login(server: TestServer, secret: string): Promise<string> {
  const res = await tokenCall(server, { grant_type: 'password', client_id: 'kubernetes', client_secret: secret, scope: 'openid', username: 'admin', password: ADMIN_PASSWORD })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.id_token as string
}

const jwksOf = async (server: TestServer) => (await (await fetch(`${server.url}/idp/keys`)).json()) as JSONWebKeySet & { keys: { kid: string }[] }

for (const dialect of DIALECTS) {
  describe(`IdP signing keys (${dialect})`, () => {
    it('rotates on schedule and publishes a retired key until tokens it signed have expired', async () => {
      const server = await startTestServer({ dialect })
      try {
        let t = Date.now()
        const hour = 3600_000
        const keys = new SigningKeys(server.deps.store, server.deps.box, { rotationMs: 6 * hour, idTokenTtlMs: 24 * hour, reloadMs: 0, now: () => t })
        const k1 = (await keys.current()).kid
        t += 5 * hour
        assert.equal((await keys.current()).kid, k1, 'not due yet')
        t += hour
        const k2 = (await keys.current()).kid
        assert.notEqual(k2, k1, 'due after the rotation period')
        assert.deepEqual((await keys.jwks()).keys.map((k) => k.kid), [k2, k1])
        t += 20 * hour
        const k3 = (await keys.current()).kid
        assert.deepEqual((await keys.jwks()).keys.map((k) => k.kid), [k3, k2, k1], 'k1 retired 20 h ago: tokens it signed may still be valid')
        t += 5 * hour
        assert.deepEqual((await keys.jwks()).keys.map((k) => k.kid), [k3, k2], 'k1 retired more than a token lifetime ago')
        const row = await server.deps.store.db.selectFrom('idp_signing_keys').select(['sealed_private_key']).where('id', '=', k3).executeTakeFirstOrThrow()
        assert.ok(row.sealed_private_key.startsWith('v1.') && !row.sealed_private_key.includes('PRIVATE KEY'), 'private keys are sealed')
        const jwk = (await keys.jwks()).keys[0]
        assert.deepEqual(Object.keys(jwk).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use'])
        assert.equal(jwk.alg, 'RS256')
      } finally {
        await server.close()
      }
    })

    it('keeps tokens signed before a rotation valid against the JWKS', async () => {
      const server = await startTestServer({ dialect })
      try {
        const secret = await kubernetesSecret(server, await adminToken(server))
        const before = await login(server, secret)
        await server.deps.idp.keys.rotate()
        const after = await login(server, secret)
        assert.notEqual(decodeProtectedHeader(after).kid, decodeProtectedHeader(before).kid)
        const res = await fetch(`${server.url}/idp/keys`)
        assert.equal(res.headers.get('cache-control'), 'max-age=600, must-revalidate')
        const jwks = createLocalJWKSet((await res.json()) as JSONWebKeySet)
        for (const token of [before, after]) await jwtVerify(token, jwks, { audience: 'kubernetes' })
      } finally {
        await server.close()
      }
    })
  })
}

describe('IdP signing keys across processes (postgres)', () => {
  it('signs with the same key in every process, and a new key reaches the others', async () => {
    const databaseUrl = await freshDatabase()
    const env = { PCC_MASTER_KEY: randomBytes(32).toString('base64') }
    const a = await startTestServer({ databaseUrl, env })
    const b = await startTestServer({ databaseUrl, env })
    try {
      const secret = await kubernetesSecret(a, await adminToken(a))
      const kidA = decodeProtectedHeader(await login(a, secret)).kid
      const kidB = decodeProtectedHeader(await login(b, secret)).kid
      assert.equal(kidB, kidA)
      await a.deps.idp.keys.rotate()
      const rotated = decodeProtectedHeader(await login(a, secret)).kid
      assert.notEqual(rotated, kidA)
      let seen: string | undefined
      for (const deadline = Date.now() + 8000; Date.now() < deadline && seen !== rotated; ) {
        seen = decodeProtectedHeader(await login(b, secret)).kid
        if (seen !== rotated) await new Promise((r) => setTimeout(r, 500))
      }
      assert.equal(seen, rotated, 'the other process signs with the new key within its reload interval')
      assert.deepEqual((await jwksOf(b)).keys.map((k) => k.kid).sort(), [kidA, rotated].sort())
    } finally {
      await b.close()
      await a.close()
    }
  })
})
