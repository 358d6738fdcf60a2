/** The IdP's dead rows (expired codes, device requests, logins in progress, access tokens) are deleted; live ones stay. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { AccessTokens } from '../../src/server/oidc/access-tokens.js'
import { AuthCodes, CODE_TTL_MS } from '../../src/server/oidc/auth-codes.js'
import { AUTH_REQUEST_TTL_MS, AuthRequests } from '../../src/server/oidc/auth-requests.js'
import { DEVICE_TTL_MS, DeviceRequests } from '../../src/server/oidc/device-requests.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'

for (const dialect of DIALECTS) {
  describe(`IdP housekeeping (${dialect})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ dialect })
    })
    after(() => server.close())

    it('deletes each kind of row once nobody can use it, and keeps the others', async () => {
      let now = Date.now()
      const clock = { now: () => now }
      const store = server.deps.store
      const db = store.db
      const codes = new AuthCodes(store, clock)
      const devices = new DeviceRequests(store, clock)
      const requests = new AuthRequests(store, clock)
      const access = new AccessTokens(store, { ttlMs: 3600_000, ...clock })
      const userId = server.bootstrap.adminUserId
      const make = async () => {
        await codes.issue({ clientId: 'kubernetes', userId, redirectUri: 'http://127.0.0.1/', scopes: ['openid'], nonce: null, codeChallenge: 'x'.repeat(43), authTime: now, passwordStamp: null })
        await devices.create('kubernetes', ['openid'])
        await requests.create({ clientId: 'kubernetes', redirectUri: 'http://127.0.0.1/', scopes: ['openid'], state: null, nonce: null, codeChallenge: null, deviceRequestId: null }, 'browser')
        await access.issue({ familyId: 'f', clientId: 'kubernetes', userId, scopes: ['openid'] })
      }
      const count = async () => ({
        codes: (await db.selectFrom('idp_auth_codes').select('id').execute()).length,
        devices: (await db.selectFrom('idp_device_requests').select('id').execute()).length,
        requests: (await db.selectFrom('idp_auth_requests').select('id').execute()).length,
        access: (await db.selectFrom('idp_access_tokens').select('token_hash').execute()).length,
      })
      const purgeAll = async () => {
        for (const rows of [codes, devices, requests, access]) await rows.purge()
      }
      await make()
      now += 2 * 3600_000
      await make()
      assert.ok(2 * 3600_000 > Math.max(CODE_TTL_MS + 3600_000, DEVICE_TTL_MS, AUTH_REQUEST_TTL_MS, 3600_000), 'the first rows are all dead now')
      assert.deepEqual(await count(), { codes: 2, devices: 2, requests: 2, access: 2 })
      await purgeAll()
      assert.deepEqual(await count(), { codes: 1, devices: 1, requests: 1, access: 1 }, 'the dead ones went, the live ones stayed')
    })
  })
}
