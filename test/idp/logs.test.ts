/**
 * Codes and secrets of the browser and device flows never reach the log: a pcc-server process at trace level
 * serves a whole code flow (login page, code, exchange, userinfo, refresh) and a device flow (device code, the
 * verification page reached through verification_uri_complete, polling); none of the passwords, codes,
 * verifiers, user codes, device codes or tokens appears in what it writes.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { spawnServer } from '../../src/testkit/process.js'
import { authorizeUrl, completeLogin, FormBrowser, pkce } from './flows.js'

const ADMIN_PASSWORD = 'adm-SECRET-pw-0101'

async function form(url: string, fields: Record<string, string>, basic: string): Promise<Record<string, string>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`kubernetes:${basic}`).toString('base64')}` }, body: new URLSearchParams(fields).toString() })
  return (await res.json()) as Record<string, string>
}

describe('IdP flows and the log', () => {
  it('writes no code, verifier, user code, device code, password or token at trace level', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pcc-idp-log-'))
    const server = spawnServer({ PCC_DATA_DIR: dataDir, PCC_LISTEN: '127.0.0.1:0', PCC_LOG_LEVEL: 'trace', PCC_ADMIN_PASSWORD: ADMIN_PASSWORD, PCC_SIMULATED_HOSTS: '0' })
    const secrets: Record<string, string> = { adminPassword: ADMIN_PASSWORD }
    try {
      const url = await server.listening()
      const issuer = `${url}/idp`
      const auth = await fetch(`${url}/identity/v3/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: ADMIN_PASSWORD } } } } }),
      })
      const identityToken = auth.headers.get('x-subject-token')!
      secrets.identityToken = identityToken
      secrets.clientSecret = ((await (await fetch(`${url}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': identityToken } })).json()) as Record<string, string>).kubernetes

      // The code flow.
      const { verifier, challenge } = pkce()
      secrets.verifier = verifier
      const redirect = 'http://127.0.0.1:38999/'
      const answer = await completeLogin(new FormBrowser(fetch), authorizeUrl(issuer, { response_type: 'code', client_id: 'kubernetes', redirect_uri: redirect, scope: 'openid offline_access', code_challenge: challenge, code_challenge_method: 'S256' }), { username: 'admin', password: ADMIN_PASSWORD })
      secrets.code = new URL(answer.location!).searchParams.get('code')!
      const tokens = await form(`${issuer}/token`, { grant_type: 'authorization_code', code: secrets.code, code_verifier: verifier, redirect_uri: redirect }, secrets.clientSecret)
      assert.ok(tokens.id_token, JSON.stringify(tokens))
      Object.assign(secrets, { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token })
      assert.equal((await fetch(`${issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status, 200)
      const refreshed = await form(`${issuer}/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, secrets.clientSecret)
      Object.assign(secrets, { refreshedAccess: refreshed.access_token, refreshedRefresh: refreshed.refresh_token })

      // The device flow, the user code in the URL as verification_uri_complete carries it.
      const device = await form(`${issuer}/device/code`, { scope: 'openid' }, secrets.clientSecret)
      Object.assign(secrets, { deviceCode: device.device_code, userCode: device.user_code, userCodeTyped: device.user_code.replace('-', '') })
      const browser = new FormBrowser(fetch)
      assert.equal((await browser.request(`${issuer}/device?user_code=${device.user_code}`)).status, 200)
      const done = await completeLogin(browser, { url: `${issuer}/device`, form: { user_code: device.user_code } }, { username: 'admin', password: ADMIN_PASSWORD })
      assert.match(done.html, /Device connected/)
      const deviceTokens = await form(`${issuer}/token`, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.device_code }, secrets.clientSecret)
      assert.ok(deviceTokens.id_token, JSON.stringify(deviceTokens))
      Object.assign(secrets, { deviceAccess: deviceTokens.access_token, deviceId: deviceTokens.id_token })
      assert.equal(await server.stop(), 0)
    } finally {
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
    const output = server.stdout() + server.stderr()
    // The log is really there, with the URLs that carried codes.
    assert.match(output, /"url":"\/idp\/device\?user_code=\[redacted\]"/)
    assert.match(output, /"url":"\/idp\/auth\?response_type=code&client_id=kubernetes/)
    for (const [name, secret] of Object.entries(secrets)) {
      assert.ok(secret && secret.length >= 8, `${name} was captured`)
      assert.ok(!output.includes(secret), `${name} appears in the log`)
    }
  })
})
