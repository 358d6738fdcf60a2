/* eslint-disable @typescript-eslint/no-explicit-any -- JSON response bodies, checked field by field */
/**
 * Keystone's OS-OAUTH1 delegation (docs/identity.md, "OAuth 1.0a delegation"). The whole dance is driven by a real
 * client, Tempest's OAUTHTokenClient (it signs with its own HMAC-SHA1 code), from a python3 script; the refusals
 * use a small signer written here from RFC 5849, independent of the server's.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminToken, call, createProject, createUser, passwordAuth, post, roleId } from './auth-helpers.js'

const run = promisify(execFile)

/** Tempest's client through the dance, then the oauth1 login signed by the same client's code; answers JSON. */
const TEMPEST_DANCE = String.raw`
import json, os, urllib.request, urllib.error
from tempest.lib import auth, exceptions
from tempest.lib.services.identity.v3.oauth_token_client import OAUTHTokenClient
env = os.environ
creds = auth.KeystoneV3Credentials(username=env['OS_USERNAME'], password=env['OS_PASSWORD'], user_domain_name='Default',
                                   project_name=env['OS_PROJECT_NAME'], project_domain_name='Default')
client = OAUTHTokenClient(auth.KeystoneV3AuthProvider(creds, env['OS_AUTH_URL']), 'identity', 'RegionOne')
key, secret, user_id = env['CONSUMER_KEY'], env['CONSUMER_SECRET'], env['USER_ID']
out = {}
rt = client.create_request_token(key, secret, env['PROJECT_ID'])
out['request_token'] = dict(rt)
out['verifier'] = client.authorize_request_token(rt['oauth_token'], [env['ROLE_ID']])['token']['oauth_verifier']
at = client.create_access_token(key, secret, rt['oauth_token'], rt['oauth_token_secret'], out['verifier'])
out['access_token'] = dict(at)
try:
    client.create_access_token(key, secret, rt['oauth_token'], rt['oauth_token_secret'], out['verifier'])
    out['reused'] = 201
except exceptions.RestClientException as e:
    out['reused'] = int(e.resp.status)
out['list'] = client.list_access_tokens(user_id)['access_tokens']
out['show'] = client.get_access_token(user_id, at['oauth_token'])['access_token']
out['roles'] = client.list_access_token_roles(user_id, at['oauth_token'])['roles']
out['role'] = client.get_access_token_role(user_id, at['oauth_token'], env['ROLE_ID'])['role']
url = client.base_url + '/auth/tokens'
params = client._generate_params_with_signature(key, url, client_secret=secret, resource_owner_key=at['oauth_token'],
                                                resource_owner_secret=at['oauth_token_secret'], http_method='POST')
headers = client._generate_oauth_header(params)
headers['Content-Type'] = 'application/json'
body = json.dumps({'auth': {'identity': {'methods': ['oauth1'], 'oauth1': {}}}}).encode()
with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers, method='POST')) as resp:
    out['login'] = {'status': resp.status, 'token': resp.headers['X-Subject-Token'], 'body': json.loads(resp.read())}
print(json.dumps(out))
`

const esc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

interface Signing {
  url: string
  consumer: { key: string; secret: string }
  token?: { key: string; secret: string }
  verifier?: string
  nonce?: string
  timestamp?: number
}

/** An `Authorization: OAuth …` header for a POST (RFC 5849 §3.4.1, HMAC-SHA1). */
function oauthHeader(s: Signing): string {
  const params: [string, string][] = [
    ['oauth_consumer_key', s.consumer.key],
    ['oauth_nonce', s.nonce ?? randomBytes(12).toString('hex')],
    ['oauth_signature_method', 'HMAC-SHA1'],
    ['oauth_timestamp', String(s.timestamp ?? Math.floor(Date.now() / 1000))],
    ['oauth_version', '1.0'],
  ]
  if (s.token) params.push(['oauth_token', s.token.key])
  if (s.verifier) params.push(['oauth_verifier', s.verifier])
  if (!s.token) params.push(['oauth_callback', 'oob'])
  const normalized = params.map(([k, v]) => `${esc(k)}=${esc(v)}`).sort().join('&')
  const base = `POST&${esc(s.url)}&${esc(normalized)}`
  const signature = createHmac('sha1', `${esc(s.consumer.secret)}&${esc(s.token?.secret ?? '')}`).update(base).digest('base64')
  return `OAuth ${[...params, ['oauth_signature', signature]].map(([k, v]) => `${esc(k)}="${esc(v)}"`).join(', ')}`
}

const parseForm = (text: string) => Object.fromEntries(text.split('&').map((kv) => kv.split('=') as [string, string]))

for (const dialect of DIALECTS) {
  describe(`OS-OAUTH1 delegation (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let projectId: string
    let userId: string
    let userToken: string
    let otherToken: string
    let consumer: { key: string; secret: string }
    let readerId: string
    const identity = () => `${server.url}/identity/v3`

    before(async () => {
      server = await startTestServer({ dialect, publicUrlFromListen: true })
      admin = await adminToken(server)
      projectId = await createProject(server, 'delegating')
      userId = await createUser(server, { name: 'delegator', password: 'delegator-secret', roles: [[projectId, 'member']] })
      await createUser(server, { name: 'bystander', password: 'bystander-secret', roles: [[projectId, 'member']] })
      userToken = (await post(server, passwordAuth({ id: userId, password: 'delegator-secret' }, { project: { id: projectId } }))).token!
      otherToken = (await post(server, passwordAuth({ name: 'bystander', domain: { id: 'default' }, password: 'bystander-secret' }, { project: { id: projectId } }))).token!
      readerId = await roleId(server, 'reader')
      const created = await call(server, 'POST', '/OS-OAUTH1/consumers', { 'x-auth-token': admin }, { consumer: { description: 'a delegate' } })
      consumer = { key: created.body.consumer.id, secret: created.body.consumer.secret }
    })
    after(() => server?.close())

    const requestToken = async (headers: Record<string, string>) => {
      const res = await fetch(`${identity()}/OS-OAUTH1/request_token`, { method: 'POST', headers })
      const text = await res.text()
      return { status: res.status, text, type: res.headers.get('content-type') }
    }
    const newRequestToken = async () => {
      const r = await requestToken({ authorization: oauthHeader({ url: `${identity()}/OS-OAUTH1/request_token`, consumer }), 'requested-project-id': projectId })
      assert.equal(r.status, 201, r.text)
      const form = parseForm(r.text)
      return { key: form.oauth_token, secret: form.oauth_token_secret }
    }
    const authorizeWith = (token: string, requestKey: string, roles: unknown[]) => call(server, 'PUT', `/OS-OAUTH1/authorize/${requestKey}`, { 'x-auth-token': token }, { roles })
    const accessToken = async (s: Omit<Signing, 'url'>) => {
      const res = await fetch(`${identity()}/OS-OAUTH1/access_token`, { method: 'POST', headers: { authorization: oauthHeader({ ...s, url: `${identity()}/OS-OAUTH1/access_token` }) } })
      return { status: res.status, text: await res.text() }
    }
    const oauthLogin = async (access: { key: string; secret: string }, extra: Record<string, unknown> = {}, signWith = consumer) => {
      const res = await fetch(`${identity()}/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: oauthHeader({ url: `${identity()}/auth/tokens`, consumer: signWith, token: access }) },
        body: JSON.stringify({ auth: { identity: { methods: ['oauth1'], oauth1: {} }, ...extra } }),
      })
      const text = await res.text()
      return { status: res.status, token: res.headers.get('x-subject-token'), body: text ? JSON.parse(text) : undefined }
    }
    /** A whole dance with the node signer: an access token delegating `roles`. */
    const delegate = async (roles: unknown[] = [{ id: readerId }]) => {
      const request = await newRequestToken()
      const verifier = (await authorizeWith(userToken, request.key, roles)).body.token.oauth_verifier
      const r = await accessToken({ consumer, token: request, verifier })
      assert.equal(r.status, 201, r.text)
      const form = parseForm(r.text)
      return { key: form.oauth_token, secret: form.oauth_token_secret }
    }

    it("runs Tempest's client through the dance; the token carries only the delegated roles and works on compute", async () => {
      const { stdout } = await run('/usr/bin/python3', ['-c', TEMPEST_DANCE], {
        env: {
          ...process.env, OS_AUTH_URL: identity(), OS_USERNAME: 'delegator', OS_PASSWORD: 'delegator-secret', OS_PROJECT_NAME: 'delegating',
          CONSUMER_KEY: consumer.key, CONSUMER_SECRET: consumer.secret, PROJECT_ID: projectId, USER_ID: userId, ROLE_ID: readerId,
        },
        timeout: 60_000,
      })
      const out = JSON.parse(stdout)
      assert.match(out.request_token.oauth_expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
      // Keystone's durations: 8 h for a request token, 24 h for an access token.
      assert.ok(Math.abs(Date.parse(out.request_token.oauth_expires_at) - Date.now() - 28_800_000) < 60_000)
      assert.ok(Math.abs(Date.parse(out.access_token.oauth_expires_at) - Date.now() - 86_400_000) < 60_000)
      assert.equal(out.reused, 404, 'a request token is exchanged once')
      const accessId = out.access_token.oauth_token
      assert.deepEqual(out.list.map((t: any) => t.id), [accessId])
      assert.equal(out.show.consumer_id, consumer.key)
      assert.equal(out.show.project_id, projectId)
      assert.equal(out.show.authorizing_user_id, userId)
      assert.equal(out.show.oauth_token_secret, undefined)
      assert.deepEqual(out.roles.map((r: any) => r.name), ['reader'])
      assert.equal(out.role.id, readerId)

      assert.equal(out.login.status, 201)
      const token = out.login.body.token
      assert.deepEqual(token.methods, ['oauth1'])
      assert.equal(token.project.id, projectId)
      assert.deepEqual(token.roles.map((r: any) => r.name), ['reader'])
      assert.deepEqual(token['OS-OAUTH1'], { access_token_id: accessId, consumer_id: consumer.key })
      const keystoneToken = out.login.token as string
      const servers = await fetch(`${server.url}/compute/v2.1/servers`, { headers: { 'x-auth-token': keystoneToken } })
      assert.equal(servers.status, 200)
      assert.equal((await call(server, 'GET', `/projects/${projectId}`, { 'x-auth-token': keystoneToken })).status, 200)

      // Secrets at rest: sealed token secrets, no verifier.
      const row = await server.deps.store.db.selectFrom('oauth_access_tokens').selectAll().where('id', '=', accessId).executeTakeFirstOrThrow()
      assert.ok(!row.secret.includes(out.access_token.oauth_token_secret))
      assert.equal(await server.deps.store.db.selectFrom('oauth_request_tokens').select('id').where('id', '=', out.request_token.oauth_token).executeTakeFirst(), undefined)
    })

    it('refuses unsigned, badly signed, stale and replayed requests in Keystone’s error shape', async () => {
      const url = `${identity()}/OS-OAUTH1/request_token`
      const unsigned = await requestToken({ 'requested-project-id': projectId })
      assert.equal(unsigned.status, 400)
      const noProject = await requestToken({ authorization: oauthHeader({ url, consumer }) })
      assert.equal(noProject.status, 400)
      const badSecret = await requestToken({ authorization: oauthHeader({ url, consumer: { ...consumer, secret: 'wrong' } }), 'requested-project-id': projectId })
      assert.equal(badSecret.status, 401)
      const error = JSON.parse(badSecret.text).error
      assert.equal(error.code, 401)
      assert.equal(error.title, 'Unauthorized')
      assert.match(error.message, /Invalid signature/)
      const otherUrl = await requestToken({ authorization: oauthHeader({ url: `${identity()}/OS-OAUTH1/access_token`, consumer }), 'requested-project-id': projectId })
      assert.equal(otherUrl.status, 401)
      const stale = await requestToken({ authorization: oauthHeader({ url, consumer, timestamp: Math.floor(Date.now() / 1000) - 3600 }), 'requested-project-id': projectId })
      assert.equal(stale.status, 401)
      const unknownConsumer = await requestToken({ authorization: oauthHeader({ url, consumer: { key: 'nope', secret: 'x' } }), 'requested-project-id': projectId })
      assert.equal(unknownConsumer.status, 401)
      const unknownProject = await requestToken({ authorization: oauthHeader({ url, consumer }), 'requested-project-id': 'no-such-project' })
      assert.equal(unknownProject.status, 404)

      const header = oauthHeader({ url, consumer, nonce: 'once-only-nonce' })
      const first = await requestToken({ authorization: header, 'requested-project-id': projectId })
      assert.equal(first.status, 201)
      assert.equal(first.type, 'application/x-www-form-urlencoded')
      const replay = await requestToken({ authorization: header, 'requested-project-id': projectId })
      assert.equal(replay.status, 401)
      assert.match(JSON.parse(replay.text).error.message, /nonce/)
    })

    it('authorizes only roles the user holds, once, before expiry; the exchange needs the verifier and the consumer', async () => {
      const request = await newRequestToken()
      assert.equal((await authorizeWith(userToken, request.key, [{ name: 'admin' }])).status, 401)
      assert.equal((await authorizeWith(userToken, request.key, [{ name: 'no-such-role' }])).status, 404)
      assert.equal((await authorizeWith(userToken, 'no-such-token', [{ id: readerId }])).status, 404)
      assert.equal((await authorizeWith(userToken, request.key, [{ id: readerId, name: 'reader' }])).status, 400)
      assert.equal((await call(server, 'PUT', `/OS-OAUTH1/authorize/${request.key}`, {}, { roles: [{ id: readerId }] })).status, 401)
      const authorized = await authorizeWith(userToken, request.key, [{ name: 'member' }])
      assert.equal(authorized.status, 200)
      const verifier = authorized.body.token.oauth_verifier as string
      assert.equal((await authorizeWith(otherToken, request.key, [{ name: 'member' }])).status, 401, 'authorized once')
      const row = await server.deps.store.db.selectFrom('oauth_request_tokens').selectAll().where('id', '=', request.key).executeTakeFirstOrThrow()
      assert.ok(row.verifier_hash && !row.verifier_hash.includes(verifier))
      assert.ok(!row.secret.includes(request.secret))

      assert.equal((await accessToken({ consumer, token: request, verifier: 'wrong-verifier' })).status, 401)
      const other = await call(server, 'POST', '/OS-OAUTH1/consumers', { 'x-auth-token': admin }, { consumer: {} })
      const otherConsumer = { key: other.body.consumer.id, secret: other.body.consumer.secret }
      assert.equal((await accessToken({ consumer: otherConsumer, token: request, verifier })).status, 401)
      assert.equal((await accessToken({ consumer, token: { ...request, secret: 'wrong' }, verifier })).status, 401)
      assert.equal((await accessToken({ consumer, token: request, verifier })).status, 201)
      assert.equal((await accessToken({ consumer, token: request, verifier })).status, 404)

      // An unauthorized request token cannot be exchanged; an expired one can neither be authorized nor exchanged.
      const pending = await newRequestToken()
      assert.equal((await accessToken({ consumer, token: pending, verifier: 'x' })).status, 401)
      const expiring = await newRequestToken()
      const verifier2 = (await authorizeWith(userToken, expiring.key, [{ id: readerId }])).body.token.oauth_verifier
      await server.deps.store.db.updateTable('oauth_request_tokens').set({ expires_at: Date.now() - 1 }).where('id', 'in', [pending.key, expiring.key]).execute()
      const late = await authorizeWith(userToken, pending.key, [{ id: readerId }])
      assert.equal(late.status, 401)
      assert.match(late.body.error.message, /expired/)
      assert.equal((await accessToken({ consumer, token: expiring, verifier: verifier2 })).status, 401)
    })

    it('logs in with an access token only as signed, without a scope; its token cannot delegate further', async () => {
      const access = await delegate([{ name: 'member' }])
      assert.equal((await oauthLogin({ ...access, secret: 'wrong' })).status, 401)
      assert.equal((await oauthLogin({ key: 'no-such-access-token', secret: 'x' })).status, 401)
      assert.equal((await oauthLogin(access, { scope: { project: { id: projectId } } })).status, 401)
      const login = await oauthLogin(access)
      assert.equal(login.status, 201)
      assert.deepEqual(login.body.token.roles.map((r: any) => r.name).sort(), ['member', 'reader'])
      const token = login.token!

      const rescope = await post(server, { auth: { identity: { methods: ['token'], token: { id: token } }, scope: { project: { id: projectId } } } })
      assert.equal(rescope.status, 403)
      assert.equal((await call(server, 'POST', `/users/${userId}/application_credentials`, { 'x-auth-token': token }, { application_credential: { name: 'nested' } })).status, 403)
      const request = await newRequestToken()
      assert.equal((await authorizeWith(token, request.key, [{ id: readerId }])).status, 403)
      assert.equal((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens`, { 'x-auth-token': token })).status, 403)

      // Nor can a restricted application credential's token hand its roles on through OAuth.
      const cred = (await call(server, 'POST', `/users/${userId}/application_credentials`, { 'x-auth-token': userToken }, { application_credential: { name: 'no-oauth', secret: 'cred-secret' } })).body.application_credential
      const credToken = (await post(server, { auth: { identity: { methods: ['application_credential'], application_credential: { id: cred.id, secret: 'cred-secret' } } } })).token!
      assert.equal((await authorizeWith(credToken, request.key, [{ id: readerId }])).status, 403)
      assert.equal((await authorizeWith(userToken, request.key, [{ id: readerId }])).status, 200)
    })

    it("keeps a user's access tokens its own; deleting one (or its consumer) ends the tokens made from it", async () => {
      const access = await delegate()
      const bystanderId = (await server.deps.store.db.selectFrom('users').select('id').where('name', '=', 'bystander').executeTakeFirstOrThrow()).id
      assert.equal((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens`, { 'x-auth-token': otherToken })).status, 403)
      assert.equal((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens/${access.key}`, { 'x-auth-token': otherToken })).status, 403)
      assert.equal((await call(server, 'DELETE', `/users/${userId}/OS-OAUTH1/access_tokens/${access.key}`, { 'x-auth-token': otherToken })).status, 403)
      assert.equal((await call(server, 'GET', `/users/${bystanderId}/OS-OAUTH1/access_tokens/${access.key}`, { 'x-auth-token': admin })).status, 404)
      assert.equal((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens/${access.key}`, { 'x-auth-token': admin })).status, 200)
      assert.equal((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens/${access.key}/roles/${await roleId(server, 'admin')}`, { 'x-auth-token': userToken })).status, 404)

      const login = await oauthLogin(access)
      assert.equal(login.status, 201)
      const token = login.token!
      assert.equal((await call(server, 'GET', `/projects/${projectId}`, { 'x-auth-token': token })).status, 200)
      assert.equal((await call(server, 'DELETE', `/users/${userId}/OS-OAUTH1/access_tokens/${access.key}`, { 'x-auth-token': userToken })).status, 204)
      assert.equal((await call(server, 'GET', `/projects/${projectId}`, { 'x-auth-token': token })).status, 401)
      assert.equal((await oauthLogin(access)).status, 401)

      const second = await delegate()
      const token2 = (await oauthLogin(second)).token!
      assert.equal((await call(server, 'GET', `/projects/${projectId}`, { 'x-auth-token': token2 })).status, 200)
      assert.equal((await call(server, 'DELETE', `/OS-OAUTH1/consumers/${consumer.key}`, { 'x-auth-token': admin })).status, 204)
      assert.equal((await call(server, 'GET', `/projects/${projectId}`, { 'x-auth-token': token2 })).status, 401)
      assert.deepEqual((await call(server, 'GET', `/users/${userId}/OS-OAUTH1/access_tokens`, { 'x-auth-token': userToken })).body.access_tokens, [])
    })
  })
}
