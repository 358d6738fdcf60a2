/**
 * The real kubectl (its `oidc` auth-provider) against pcc over HTTPS (PCC_TLS=auto): with an expired id-token
 * and a refresh token in the kubeconfig, kubectl must refresh through {base}/idp/token and call the cluster
 * with `Authorization: Bearer <new id_token>`. The "cluster" is a small HTTPS server in the test that verifies
 * the bearer token against pcc's JWKS, as kube-apiserver would.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose'
import { ADMIN_PASSWORD, freePort, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, FULL_SCOPE } from './helpers.js'

const KUBECTL = '/usr/bin/kubectl'

function https(url: string, ca: Buffer, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, ca }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(KUBECTL, args, { env, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }))
  })
}

/** A JWT kubectl reads as expired (it decodes id-tokens without verifying them). */
function expiredToken(issuer: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${part({ alg: 'RS256', kid: 'old' })}.${part({ iss: issuer, aud: 'kubernetes', sub: 'x', iat: now - 7200, exp: now - 3600 })}.${Buffer.from('sig').toString('base64url')}`
}

describe('kubectl oidc auth-provider against the IdP over HTTPS', () => {
  let server: TestServer
  let ca: Buffer
  let issuer: string
  let cluster: Server
  let clusterUrl: string
  let work: string
  const seen: { authorization?: string; verified: boolean; path: string }[] = []

  before(async () => {
    assert.ok(existsSync(KUBECTL), `kubectl is required at ${KUBECTL}`)
    const port = await freePort()
    server = await startTestServer({ env: { PCC_TLS: 'auto', PCC_LISTEN: `127.0.0.1:${port}`, PCC_PUBLIC_URL: `https://127.0.0.1:${port}` } })
    assert.ok(server.caFile)
    ca = readFileSync(server.caFile!)
    issuer = `https://127.0.0.1:${port}/idp`
    work = mkdtempSync(join(tmpdir(), 'pcc-kubectl-'))

    // The cluster reuses pcc's certificate (valid for 127.0.0.1, signed by the same CA).
    const tls = join(server.dataDir, 'tls')
    cluster = createServer({ key: readFileSync(join(tls, 'server.key')), cert: readFileSync(join(tls, 'server.crt')) }, async (req, res) => {
      const authorization = req.headers.authorization
      let verified = false
      if (authorization?.startsWith('Bearer ')) {
        try {
          const discovery = JSON.parse((await https(`${issuer}/.well-known/openid-configuration`, ca)).body) as { jwks_uri: string; issuer: string }
          const jwks = createLocalJWKSet(JSON.parse((await https(discovery.jwks_uri, ca)).body) as JSONWebKeySet)
          await jwtVerify(authorization.slice(7), jwks, { issuer: discovery.issuer, audience: 'kubernetes', algorithms: ['RS256'] })
          verified = true
        } catch {
          verified = false
        }
      }
      seen.push({ authorization, verified, path: req.url ?? '' })
      res.setHeader('content-type', 'application/json')
      if (!verified) {
        res.statusCode = 401
        res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 }))
        return
      }
      res.end(JSON.stringify({ major: '1', minor: '32', gitVersion: 'v1.32.0', platform: 'linux/amd64' }))
    })
    await new Promise<void>((resolve) => cluster.listen(0, '127.0.0.1', resolve))
    clusterUrl = `https://127.0.0.1:${(cluster.address() as AddressInfo).port}`
  })

  after(async () => {
    await new Promise((resolve) => cluster?.close(resolve))
    await server?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('serves discovery with the https issuer of the public URL', async () => {
    const res = await https(`${issuer}/.well-known/openid-configuration`, ca)
    assert.equal(res.status, 200)
    const body = JSON.parse(res.body) as { issuer: string; token_endpoint: string; jwks_uri: string }
    assert.equal(body.issuer, issuer)
    assert.equal(body.token_endpoint, `${issuer}/token`)
    assert.equal(body.jwks_uri, `${issuer}/keys`)
  })

  it('refreshes through /idp/token and sends the new id_token as the bearer', async () => {
    const token = await adminToken(server)
    const secrets = await https(`${server.url.replace('http:', 'https:')}/resmgr/v2/idpclients`, ca, { headers: { 'x-auth-token': token } })
    assert.equal(secrets.status, 200)
    const clientSecret = (JSON.parse(secrets.body) as Record<string, string>).kubernetes
    const form = new URLSearchParams({ grant_type: 'password', client_id: 'kubernetes', client_secret: clientSecret, scope: FULL_SCOPE, username: 'admin', password: ADMIN_PASSWORD, connector_id: 'default' })
    const login = await https(`${issuer}/token`, ca, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() })
    assert.equal(login.status, 200, login.body)
    const refreshToken = (JSON.parse(login.body) as { refresh_token: string }).refresh_token

    const kubeconfig = join(work, 'config')
    const stale = expiredToken(issuer)
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: pcc',
        '  cluster:',
        `    server: ${clusterUrl}`,
        `    certificate-authority: ${server.caFile}`,
        'users:',
        '- name: oidc',
        '  user:',
        '    auth-provider:',
        '      name: oidc',
        '      config:',
        `        idp-issuer-url: ${issuer}`,
        '        client-id: kubernetes',
        `        client-secret: ${clientSecret}`,
        `        id-token: ${stale}`,
        `        refresh-token: ${refreshToken}`,
        `        idp-certificate-authority: ${server.caFile}`,
        'contexts:',
        '- name: pcc',
        '  context:',
        '    cluster: pcc',
        '    user: oidc',
        'current-context: pcc',
        '',
      ].join('\n'),
    )
    const result = await run(['--kubeconfig', kubeconfig, 'get', '--raw', '/version'], { HOME: work, PATH: '/usr/bin:/bin' })
    assert.equal(result.code, 0, `kubectl failed: ${result.stderr}`)
    assert.match(result.stdout, /v1\.32\.0/)

    const calls = seen.filter((s) => s.authorization)
    assert.ok(calls.length >= 1, 'kubectl called the cluster with a bearer token')
    assert.ok(calls.every((c) => c.verified), 'every bearer token verified against the JWKS')
    const bearer = calls.at(-1)!.authorization!.slice(7)
    assert.notEqual(bearer, stale)

    // kubectl saved the new tokens; the one it sent is the one it saved, and the refresh token was rotated.
    const saved = readFileSync(kubeconfig, 'utf8')
    assert.ok(saved.includes(bearer), 'the new id-token is persisted in the kubeconfig')
    assert.ok(!saved.includes(refreshToken), 'the rotated refresh token replaced the old one')
    const used = await server.deps.store.db.selectFrom('idp_refresh_tokens').select('used_at').where('used_at', 'is not', null).execute()
    assert.equal(used.length, 1, 'one refresh grant went through /idp/token')

    // A second run reuses the saved, still-valid id-token without refreshing.
    const second = await run(['--kubeconfig', kubeconfig, 'get', '--raw', '/version'], { HOME: work, PATH: '/usr/bin:/bin' })
    assert.equal(second.code, 0, second.stderr)
    assert.equal(seen.at(-1)!.authorization, `Bearer ${bearer}`)
    assert.equal((await server.deps.store.db.selectFrom('idp_refresh_tokens').select('used_at').where('used_at', 'is not', null).execute()).length, 1)
  })
})
