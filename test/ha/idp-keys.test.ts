/** IdP signing keys across processes: a key one process starts signing with is in every process's JWKS within a second. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SigningKeys } from '../../src/server/oidc/signing-keys.js'
import { startTestServer } from '../../src/testkit/harness.js'

test('postgres: after process A rotates, process B publishes the new key within 1 s (its signer cache may stay 5 s)', async () => {
  const server = await startTestServer({ dialect: 'postgres' })
  try {
    let t = Date.now()
    const options = { rotationMs: 3600_000, idTokenTtlMs: 86_400_000, reloadMs: 5000, now: () => t }
    const a = new SigningKeys(server.deps.store, server.deps.box, options)
    const b = new SigningKeys(server.deps.store, server.deps.box, options)
    const k1 = (await a.current()).kid
    assert.deepEqual((await b.jwks()).keys.map((k) => k.kid), [k1])
    t += 10
    await a.rotate()
    const k2 = (await a.current()).kid
    assert.notEqual(k2, k1)
    t += 400
    assert.deepEqual((await b.jwks()).keys.map((k) => k.kid), [k1], 'read less than a second ago: cached')
    t += 700
    assert.deepEqual((await b.jwks()).keys.map((k) => k.kid), [k2, k1], 'a second later the new key is published by B too')
  } finally {
    await server.close()
  }
})
