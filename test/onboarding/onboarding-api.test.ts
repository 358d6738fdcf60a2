import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'

async function token(server: TestServer, scoped = true): Promise<string> {
  const issued = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: scoped ? { p: server.bootstrap.adminProjectId } : null })
  return issued.token
}

function registration(token: string, overrides: Record<string, unknown> = {}) {
  return {
    registration_token: token,
    host_id: randomUUID(),
    hostname: `node-${randomUUID().slice(0, 8)}`,
    os_info: { id: 'ubuntu', version_id: '22.04', pretty_name: 'Ubuntu 22.04.4 LTS' },
    arch: 'x86_64',
    cpu: { count: 16, model: 'Xeon', virtualization: true },
    memory_mb: 65536,
    disk_gb: 500,
    nics: [
      { name: 'eth0', mac: '52:54:00:00:00:01', ips: [] },
      { name: 'bond0', mac: '52:54:00:00:00:01', ips: ['10.0.0.5'], bond: { mode: '802.3ad', slaves: ['eth0', 'eth1'] } },
    ],
    agent_version: '0.1.0',
    ...overrides,
  }
}

for (const dialect of DIALECTS) {
  describe(`resmgr onboarding API (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let unscoped: string
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_HOST_DOWN_AFTER_SECONDS: '5', PCC_RECONCILE_SECONDS: '0' } })
      admin = await token(server)
      unscoped = await token(server, false)
    })
    after(() => server.close())

    const call = async (method: string, path: string, init: { body?: unknown; token?: string; credential?: string } = {}) => {
      const headers: Record<string, string> = {}
      if (init.token) headers['x-auth-token'] = init.token
      if (init.credential) headers.authorization = `Bearer ${init.credential}`
      if (init.body !== undefined) headers['content-type'] = 'application/json'
      const res = await fetch(`${server.url}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    const newToken = async (body: unknown = {}) => {
      const r = await call('POST', '/resmgr/v1/registration-tokens', { token: admin, body })
      assert.equal(r.status, 201, JSON.stringify(r.body))
      return r.body as { token: string; id: string; expires_at: string }
    }
    const register = async (overrides: Record<string, unknown> = {}) => {
      const { token: t } = await newToken()
      const body = registration(t, overrides)
      const r = await call('POST', '/resmgr/v1/hosts/register', { body })
      assert.equal(r.status, 201, JSON.stringify(r.body))
      return { hostId: body.host_id, hostname: body.hostname, credential: r.body.credential as string, view: r.body.host }
    }

    it('creates registration tokens for admins only, with an expiry', async () => {
      const created = await newToken({ expires_in: 600, note: 'rack 4' })
      assert.match(created.token, /^pccr_/)
      assert.ok(Math.abs(Date.parse(created.expires_at) - Date.now() - 600_000) < 5000)
      assert.equal((await call('POST', '/resmgr/v1/registration-tokens', { token: unscoped, body: {} })).status, 403)
      const none = await call('POST', '/resmgr/v1/registration-tokens', { body: {} })
      assert.equal(none.status, 401)
      assert.equal(none.body.error.code, 401)
      assert.equal((await call('POST', '/resmgr/v1/registration-tokens', { token: admin, body: { expires_in: 'soon' } })).status, 400)
    })

    it('registers a host once per token: the second use is 401 and changes nothing', async () => {
      const { token: t } = await newToken()
      const first = registration(t)
      const r1 = await call('POST', '/resmgr/v1/hosts/register', { body: first })
      assert.equal(r1.status, 201)
      assert.match(r1.body.credential, /^pcch_/)
      const view = r1.body.host
      assert.equal(view.id, first.host_id)
      assert.equal(view.info.hostname, first.hostname)
      assert.equal(view.info.os_info, 'Ubuntu 22.04.4 LTS')
      assert.equal(view.info.responding, true)
      assert.deepEqual(view.roles, [])
      assert.equal(view.role_status, '')
      assert.deepEqual(view.extensions.ip_address.data, ['10.0.0.5'])
      assert.deepEqual(view.extensions.interfaces.data.bond0.bond, { mode: '802.3ad', slaves: ['eth0', 'eth1'] })
      assert.equal(view.hypervisor_info.vcpus, 16)
      // What the scheduler places per unit of capacity (the web console's hypervisors page measures against it).
      assert.deepEqual([view.hypervisor_info.cpu_allocation_ratio, view.hypervisor_info.ram_allocation_ratio, view.hypervisor_info.disk_allocation_ratio], [4, 1, 1])

      const again = await call('POST', '/resmgr/v1/hosts/register', { body: registration(t) })
      assert.equal(again.status, 401)
      assert.match(again.body.error.message, /registration token/)
      const other = { ...registration(t), host_id: first.host_id, hostname: 'renamed-by-replay' }
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: other })).status, 401)
      const shown = await call('GET', `/resmgr/v1/hosts/${first.host_id}`, { token: admin })
      assert.equal(shown.body.info.hostname, first.hostname)
      const list = await call('GET', '/resmgr/v1/hosts', { token: admin })
      assert.equal(list.body.filter((h: { id: string }) => h.id === first.host_id).length, 1)
    })

    it('refuses expired and unknown tokens, and bad bodies with 400 naming the field', async () => {
      const { token: t, id } = await newToken({ expires_in: 60 })
      await server.deps.store.db.updateTable('registration_tokens').set({ expires_at: Date.now() - 1 }).where('id', '=', id).execute()
      const body = registration(t)
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body })).status, 401)
      assert.equal((await call('GET', `/resmgr/v1/hosts/${body.host_id}`, { token: admin })).status, 404)
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration('pccr_nonsense') })).status, 401)
      const { token: fresh } = await newToken()
      const bad = await call('POST', '/resmgr/v1/hosts/register', { body: { ...registration(fresh), host_id: 'not-a-uuid' } })
      assert.equal(bad.status, 400)
      assert.match(bad.body.error.message, /host_id/)
      // The refused request did not use the token up.
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration(fresh) })).status, 201)
    })

    it('re-registering a host needs a token issued for it, never renames it, and rotates its credential', async () => {
      const a = await register()
      const hostname = (await call('GET', `/resmgr/v1/hosts/${a.hostId}`, { token: admin })).body.info.hostname
      // A token for new hosts cannot take an existing host: 409, the token not used up, the host's credential kept.
      const { token: plain } = await newToken()
      const stolen = await call('POST', '/resmgr/v1/hosts/register', { body: registration(plain, { host_id: a.hostId, hostname: a.hostname }) })
      assert.equal(stolen.status, 409, JSON.stringify(stolen.body))
      assert.match(stolen.body.error.message, /registration token issued for it/)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { credential: a.credential, body: {} })).status, 200)
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration(plain) })).status, 201)
      // A token issued for another host id registers that host only.
      const { token: other } = await newToken({ host_id: randomUUID() })
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration(other, { host_id: a.hostId, hostname: a.hostname }) })).status, 403)
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration(other) })).status, 403)
      assert.equal((await call('POST', '/resmgr/v1/registration-tokens', { token: admin, body: { host_id: 'not-a-uuid' } })).status, 400)
      // The host's own token cannot rename it.
      const issued = await newToken({ host_id: a.hostId.toUpperCase() })
      assert.equal((issued as { host_id?: string }).host_id, a.hostId)
      const renamed = await call('POST', '/resmgr/v1/hosts/register', { body: registration(issued.token, { host_id: a.hostId, hostname: `renamed-${randomUUID().slice(0, 8)}` }) })
      assert.equal(renamed.status, 409, JSON.stringify(renamed.body))
      assert.equal((await call('GET', `/resmgr/v1/hosts/${a.hostId}`, { token: admin })).body.info.hostname, hostname)
      const t = issued.token
      const r = await call('POST', '/resmgr/v1/hosts/register', { body: registration(t, { host_id: a.hostId, hostname: a.hostname }) })
      assert.equal(r.status, 201)
      assert.notEqual(r.body.credential, a.credential)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { credential: a.credential, body: {} })).status, 401)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { credential: r.body.credential, body: {} })).status, 200)
      // Another host's hostname is taken: 409.
      const b = await register()
      const { token: t2 } = await newToken()
      assert.equal((await call('POST', '/resmgr/v1/hosts/register', { body: registration(t2, { hostname: b.hostname }) })).status, 409)
    })

    it('a host credential acts only for its own host and never on user APIs', async () => {
      const a = await register()
      const b = await register()
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { credential: a.credential, body: {} })).status, 200)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${b.hostId}/heartbeat`, { credential: a.credential, body: {} })).status, 403)
      assert.equal((await call('GET', `/resmgr/v1/hosts/${b.hostId}/commands?wait=0`, { credential: a.credential })).status, 403)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${b.hostId}/roles/hypervisor/status`, { credential: a.credential, body: { state: 'ok' } })).status, 403)
      // User APIs do not take host credentials.
      assert.equal((await call('GET', '/resmgr/v1/hosts', { credential: a.credential })).status, 401)
      assert.equal((await call('GET', `/resmgr/v1/hosts/${a.hostId}`, { credential: a.credential })).status, 401)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${a.hostId}/roles/hypervisor`, { credential: a.credential, body: {} })).status, 401)
      assert.equal((await call('GET', '/compute/v2.1/os-hypervisors', { credential: a.credential })).status, 401)
      assert.equal((await call('GET', '/resmgr/v2/idpclients', { credential: a.credential })).status, 401)
      // Nor does a user token work for the agent calls.
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { credential: admin, body: {} })).status, 401)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/heartbeat`, { body: {} })).status, 401)
    })

    it('roles: admin only, 409 while converging, converged by the agent, removal answered with removed', async () => {
      const h = await register()
      const roles = await call('GET', '/resmgr/v1/roles', { token: admin })
      assert.equal(roles.status, 200)
      assert.ok(roles.body.some((r: { name: string }) => r.name === 'hypervisor'))

      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: unscoped, body: {} })).status, 403)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/no-such-role`, { token: admin, body: {} })).status, 404)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${randomUUID()}/roles/hypervisor`, { token: admin, body: {} })).status, 404)
      const put = await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin, body: {} })
      assert.equal(put.status, 200)
      assert.equal(put.body.role_status, 'converging')
      assert.deepEqual(put.body.roles_status_details, { hypervisor: 'applying' })
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin, body: {} })).status, 409)
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin })).status, 409)
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })).status, 409)

      const hb = await call('POST', `/resmgr/v1/hosts/${h.hostId}/heartbeat`, { credential: h.credential, body: { capacity: { vcpus: 12, memory_mb: 32000, disk_gb: 300 } } })
      assert.deepEqual(hb.body, { roles: { hypervisor: 'applying' } })
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor/status`, { credential: h.credential, body: { state: 'bogus' } })).status, 400)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor/status`, { credential: h.credential, body: { state: 'ok' } })).status, 200)
      const ok = await call('GET', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })
      assert.equal(ok.body.role_status, 'ok')
      assert.deepEqual(ok.body.roles, ['hypervisor'])
      assert.equal(ok.body.hypervisor_info.vcpus, 12)
      const hyps = await call('GET', '/compute/v2.1/os-hypervisors', { token: admin })
      assert.ok(hyps.body.hypervisors.some((x: { hypervisor_hostname: string; state: string }) => x.hypervisor_hostname === h.hostname && x.state === 'up'))

      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: unscoped })).status, 403)
      const del = await call('DELETE', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin })
      assert.equal(del.status, 200)
      assert.deepEqual(del.body.roles_status_details, { hypervisor: 'removing' })
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin, body: {} })).status, 409)
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor/status`, { credential: h.credential, body: { state: 'removed' } })).status, 200)
      const gone = await call('GET', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })
      assert.deepEqual(gone.body.roles, [])
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin })).status, 404)
    })

    it('a failed role shows failed with the agent message', async () => {
      const h = await register()
      await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin, body: {} })
      await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor/status`, { credential: h.credential, body: { state: 'failed', message: 'kvm module missing' } })
      const v = await call('GET', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })
      assert.equal(v.body.role_status, 'failed')
      assert.equal(v.body.message, 'kvm module missing')
      // failed is not converging: the admin may apply again.
      assert.equal((await call('PUT', `/resmgr/v1/hosts/${h.hostId}/roles/hypervisor`, { token: admin, body: {} })).status, 200)
    })

    it('deleting a host removes it and its credential; admins only', async () => {
      const h = await register()
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}`, { token: unscoped })).status, 403)
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })).status, 200)
      assert.equal((await call('GET', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })).status, 404)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${h.hostId}/heartbeat`, { credential: h.credential, body: {} })).status, 401)
      assert.equal((await call('DELETE', `/resmgr/v1/hosts/${h.hostId}`, { token: admin })).status, 404)
    })

    it('commands: delivered once by the long-poll, results reach the waiter, other hosts cannot answer them', async () => {
      const a = await register()
      const b = await register()
      const channel = server.deps.onboarding.channel
      const empty = Date.now()
      const none = await call('GET', `/resmgr/v1/hosts/${a.hostId}/commands?wait=0.3`, { credential: a.credential })
      assert.deepEqual(none.body, { commands: [] })
      assert.ok(Date.now() - empty >= 250)
      const poll = call('GET', `/resmgr/v1/hosts/${a.hostId}/commands?wait=10`, { credential: a.credential })
      await new Promise((r) => setTimeout(r, 200))
      const started = Date.now()
      const id = await channel.enqueue(a.hostId, 'info', { serverId: 's1' })
      const got = await poll
      assert.ok(Date.now() - started < 2000)
      assert.deepEqual(got.body.commands, [{ id, op: 'info', args: { serverId: 's1' } }])
      assert.deepEqual((await call('GET', `/resmgr/v1/hosts/${a.hostId}/commands?wait=0`, { credential: a.credential })).body.commands, [])
      assert.equal((await call('GET', `/resmgr/v1/hosts/${a.hostId}/commands?wait=0&redeliver=true`, { credential: a.credential })).body.commands.length, 1)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${b.hostId}/commands/${id}`, { credential: b.credential, body: { result: 1 } })).status, 404)
      const waiting = channel.waitResult(id, 5000)
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/commands/${id}`, { credential: a.credential, body: { result: { powerState: 1 } } })).status, 204)
      assert.deepEqual(await waiting, { ok: true, result: { powerState: 1 } })
      // A re-posted result changes nothing.
      assert.equal((await call('POST', `/resmgr/v1/hosts/${a.hostId}/commands/${id}`, { credential: a.credential, body: { error: { message: 'late' } } })).status, 204)
      assert.deepEqual(await channel.waitResult(id, 1000), { ok: true, result: { powerState: 1 } })
      // Nobody answers: the waiter gets an error and the command is withdrawn.
      const lost = await channel.enqueue(b.hostId, 'info', { serverId: 's2' })
      const outcome = await channel.waitResult(lost, 300)
      assert.equal(outcome.ok, false)
      assert.deepEqual((await call('GET', `/resmgr/v1/hosts/${b.hostId}/commands?wait=0`, { credential: b.credential })).body.commands, [])
    })
  })
}
