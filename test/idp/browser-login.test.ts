/**
 * The login pages in a real browser (Debian's Chromium through playwright-core), over HTTPS: a user types the
 * password (keyboard only), submits, and lands on the client's loopback redirect with a code, which openid-client
 * exchanges; the ID token passes kube-apiserver's checks, openid-client refreshes it, and kubectl uses the
 * refreshed tokens against a cluster that authenticates them as kube-apiserver would. Also: the TOTP step of an
 * MFA user and the device verification page.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as client from 'openid-client'
import type { BrowserContext } from 'playwright-core'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { expiredToken, kubeApiserverAuthenticate, kubectl, oidcKubeconfig, startFakeCluster, startHttpsPcc, type FakeCluster, type HttpsPcc } from './flows.js'
import { addTotpCredential, adminToken, createUser, FULL_SCOPE } from './helpers.js'

const CAROL = { name: 'carol', email: 'carol@example.com', password: 'carol-password-1' }
const DAN = { name: 'dan', email: 'dan@example.com', password: 'dan-password-1' }

describe('IdP login pages in Chromium', { skip: browserMissing() }, () => {
  let pcc: HttpsPcc
  let browser: TestBrowser
  let context: BrowserContext
  let callback: Server
  let redirectUri: string
  let cluster: FakeCluster
  let config: client.Configuration
  let secret: string
  let work: string
  const seed = randomBytes(20)

  before(async () => {
    pcc = await startHttpsPcc()
    const admin = await adminToken(pcc.server)
    secret = ((await (await pcc.fetch(`${pcc.base}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': admin } })).json()) as Record<string, string>).kubernetes
    await createUser(pcc.server, { ...CAROL, role: 'member' })
    const dan = await createUser(pcc.server, { ...DAN, role: 'reader', options: { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] } })
    await addTotpCredential(pcc.server, dan, base32Encode(seed), { fetch: pcc.fetch, base: pcc.base })
    // The client's loopback listener, as kubelogin runs one.
    callback = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in. You can close this page.'))
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve))
    redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/`
    cluster = await startFakeCluster(pcc, 'kubernetes')
    config = await client.discovery(new URL(pcc.issuer), 'kubernetes', secret, undefined, { [client.customFetch]: pcc.fetch as client.CustomFetch })
    config[client.customFetch] = pcc.fetch as client.CustomFetch
    work = mkdtempSync(join(tmpdir(), 'pcc-browser-login-'))
    browser = await launchBrowser()
    // pcc's certificate comes from its own CA, which this throw-away profile does not know.
    context = await browser.newContext({ ignoreHTTPSErrors: true })
  })

  after(async () => {
    await context?.close().catch(() => {})
    await browser?.close()
    await cluster?.close()
    await new Promise((resolve) => callback?.close(resolve))
    await pcc?.server.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  /** openid-client's authorization URL with fresh PKCE, state and nonce. */
  const authorization = async () => {
    const verifier = client.randomPKCECodeVerifier()
    const state = client.randomState()
    const nonce = client.randomNonce()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: FULL_SCOPE, state, nonce, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' })
    return { url, checks: { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce } }
  }

  it('types the password, submits and lands on the redirect with a code; kubectl runs with the refreshed tokens', async () => {
    const page = await context.newPage()
    const { url, checks } = await authorization()
    await page.goto(url.href)
    assert.equal(await page.title(), 'Sign in · pcc')
    // The fields are labelled and the first one has focus: the whole form works from the keyboard.
    assert.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'username')
    await page.getByLabel('Username or e-mail').waitFor()
    await page.keyboard.type(CAROL.email)
    await page.keyboard.press('Tab')
    await page.keyboard.type('not-the-password')
    await page.keyboard.press('Enter')
    const alert = page.getByRole('alert')
    await alert.waitFor()
    assert.equal(await alert.textContent(), 'Invalid username or password.')
    assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true')
    assert.equal(await page.getByLabel('Username or e-mail').inputValue(), CAROL.email, 'the username stays filled in')

    assert.equal(await page.evaluate('document.activeElement && document.activeElement.id'), 'password', 'focus is on the password now')
    await page.keyboard.type(CAROL.password)
    await page.keyboard.press('Enter')
    await page.waitForURL((u) => u.href.startsWith(redirectUri), { timeout: 30_000 })
    const landed = new URL(page.url())
    assert.ok(landed.searchParams.get('code'))
    assert.match(await page.textContent('body') ?? '', /Signed in/)
    await page.close()

    const tokens = await client.authorizationCodeGrant(config, landed, checks)
    const user = await kubeApiserverAuthenticate(tokens.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })
    assert.equal(user.username, CAROL.email)

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!)
    const kubeconfig = join(work, 'config')
    const options = { clusterUrl: cluster.url, caFile: pcc.server.caFile!, issuer: pcc.issuer, clientId: 'kubernetes', clientSecret: secret }
    writeFileSync(kubeconfig, oidcKubeconfig({ ...options, idToken: refreshed.id_token!, refreshToken: refreshed.refresh_token! }))
    const whoami = await kubectl(['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'json'], work)
    assert.equal(whoami.code, 0, whoami.stderr)
    const review = JSON.parse(whoami.stdout) as { status: { userInfo: { username: string; groups: string[] } } }
    assert.equal(review.status.userInfo.username, CAROL.email)
    assert.deepEqual(review.status.userInfo.groups, ['admin', 'admin:member', 'admin:reader', 'system:authenticated'])
    assert.equal(cluster.seen.at(-1)!.authorization, `Bearer ${refreshed.id_token}`)

    // Once the ID token has expired, kubectl refreshes it itself with the refresh token the browser login gave.
    writeFileSync(kubeconfig, oidcKubeconfig({ ...options, idToken: expiredToken(pcc.issuer), refreshToken: refreshed.refresh_token! }))
    const again = await kubectl(['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'json'], work)
    assert.equal(again.code, 0, again.stderr)
    assert.equal((JSON.parse(again.stdout) as typeof review).status.userInfo.username, CAROL.email)
    assert.notEqual(cluster.seen.at(-1)!.authorization, `Bearer ${refreshed.id_token}`, 'kubectl sent a newly refreshed token')
  })

  it('asks a user under MFA for the TOTP code on a second page', async () => {
    const page = await context.newPage()
    const { url, checks } = await authorization()
    await page.goto(url.href)
    await page.getByLabel('Username or e-mail').fill(DAN.name)
    await page.getByLabel('Password').fill(DAN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    const code = page.getByLabel('Authentication code')
    await code.waitFor()
    assert.equal(await page.title(), 'Enter your code · pcc')
    assert.equal(await code.getAttribute('autocomplete'), 'one-time-code')
    const right = totpCode(seed, Date.now())
    await code.fill(String((Number(right) + 1) % 1_000_000).padStart(6, '0'))
    await page.keyboard.press('Enter')
    await page.getByRole('alert').waitFor()
    assert.match((await page.getByRole('alert').textContent())!, /not valid/)
    await page.getByLabel('Authentication code').fill(totpCode(seed, Date.now()))
    await page.keyboard.press('Enter')
    await page.waitForURL((u) => u.href.startsWith(redirectUri), { timeout: 30_000 })
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), checks)
    assert.equal((await kubeApiserverAuthenticate(tokens.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })).username, DAN.email)
    await page.close()
  })

  it('approves a device on the verification page', async () => {
    const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email groups' })
    const page = await context.newPage()
    await page.goto(device.verification_uri_complete!)
    assert.equal(await page.getByLabel('Device code').inputValue(), device.user_code)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByLabel('Username or e-mail').fill(CAROL.name)
    await page.getByLabel('Password').fill(CAROL.password)
    await page.keyboard.press('Enter')
    await page.getByRole('button', { name: 'Approve' }).waitFor()
    assert.match((await page.textContent('main'))!, /Approve only if you started this yourself/)
    assert.match((await page.textContent('main'))!, /See your groups and your roles on projects/)
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.getByRole('heading', { name: 'Device connected' }).waitFor()
    await page.close()
    const tokens = await client.pollDeviceAuthorizationGrant(config, device)
    assert.equal((await kubeApiserverAuthenticate(tokens.id_token!, { issuer: pcc.issuer, clientId: 'kubernetes', fetch: pcc.fetch })).username, CAROL.email)
  })
})
