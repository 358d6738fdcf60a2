/**
 * The real kubectl (its `oidc` auth-provider) against pcc over HTTPS (PCC_TLS=auto): with an expired id-token
 * and a refresh token in the kubeconfig, kubectl must refresh through {base}/idp/token and call the cluster
 * with `Authorization: Bearer <new id_token>`. The "cluster" is a small HTTPS server in the test that verifies
 * the bearer token against pcc's JWKS, as kube-apiserver would (flows.ts).
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { expiredToken, kubectl, KUBECTL, oidcKubeconfig, startFakeCluster, startHttpsPcc, type FakeCluster, type HttpsPcc } from './flows.js'
import { adminToken, createUser, FULL_SCOPE } from './helpers.js'

describe('kubectl oidc auth-provider against the IdP over HTTPS', () => {
  let pcc: HttpsPcc
  let cluster: FakeCluster
  let work: string

  before(async () => {
    assert.ok(existsSync(KUBECTL), `kubectl is required at ${KUBECTL}`)
    pcc = await startHttpsPcc()
    cluster = await startFakeCluster(pcc, 'kubernetes')
    work = mkdtempSync(join(tmpdir(), 'pcc-kubectl-'))
  })

  after(async () => {
    await cluster?.close()
    await pcc?.server.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('serves discovery with the https issuer of the public URL', async () => {
    const res = await pcc.fetch(`${pcc.issuer}/.well-known/openid-configuration`)
    assert.equal(res.status, 200)
    const body = (await res.json()) as { issuer: string; token_endpoint: string; jwks_uri: string }
    assert.equal(body.issuer, pcc.issuer)
    assert.equal(body.token_endpoint, `${pcc.issuer}/token`)
    assert.equal(body.jwks_uri, `${pcc.issuer}/keys`)
  })

  it('refreshes through /idp/token and sends the new id_token as the bearer', async () => {
    await createUser(pcc.server, { name: 'kube-user', password: 'kube-password-1', email: 'kube@example.com', role: 'member' })
    const token = await adminToken(pcc.server)
    const secrets = await pcc.fetch(`${pcc.base}/resmgr/v2/idpclients`, { headers: { 'x-auth-token': token } })
    assert.equal(secrets.status, 200)
    const clientSecret = ((await secrets.json()) as Record<string, string>).kubernetes
    const form = new URLSearchParams({ grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: FULL_SCOPE, username: 'kube-user', password: 'kube-password-1', connector_id: 'default' })
    const login = await pcc.fetch(`${pcc.issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() })
    assert.equal(login.status, 200)
    const refreshToken = ((await login.json()) as { refresh_token: string }).refresh_token

    const kubeconfig = join(work, 'config')
    const stale = expiredToken(pcc.issuer)
    writeFileSync(kubeconfig, oidcKubeconfig({ clusterUrl: cluster.url, caFile: pcc.server.caFile!, issuer: pcc.issuer, clientId: 'kubernetes', clientSecret, idToken: stale, refreshToken }))
    const result = await kubectl(['--kubeconfig', kubeconfig, 'get', '--raw', '/version'], work)
    assert.equal(result.code, 0, `kubectl failed: ${result.stderr}`)
    assert.match(result.stdout, /v1\.32\.0/)

    const calls = cluster.seen.filter((s) => s.authorization)
    assert.ok(calls.length >= 1, 'kubectl called the cluster with a bearer token')
    assert.ok(calls.every((c) => c.user?.username === 'kube@example.com'), 'every bearer token verified against the JWKS, username from email')
    const bearer = calls.at(-1)!.authorization!.slice(7)
    assert.notEqual(bearer, stale)

    // kubectl saved the new tokens; the one it sent is the one it saved, and the refresh token was rotated.
    const saved = readFileSync(kubeconfig, 'utf8')
    assert.ok(saved.includes(bearer), 'the new id-token is persisted in the kubeconfig')
    assert.ok(!saved.includes(refreshToken), 'the rotated refresh token replaced the old one')
    const db = pcc.server.deps.store.db
    const used = await db.selectFrom('idp_refresh_tokens').select('used_at').where('used_at', 'is not', null).execute()
    assert.equal(used.length, 1, 'one refresh grant went through /idp/token')

    // A second run reuses the saved, still-valid id-token without refreshing.
    const second = await kubectl(['--kubeconfig', kubeconfig, 'get', '--raw', '/version'], work)
    assert.equal(second.code, 0, second.stderr)
    assert.equal(cluster.seen.at(-1)!.authorization, `Bearer ${bearer}`)
    assert.equal((await db.selectFrom('idp_refresh_tokens').select('used_at').where('used_at', 'is not', null).execute()).length, 1)
  })
})
