import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { hostStatus } from '../../src/server/hosts/host-status.js'
import { registerHost, setHostRole } from '../../src/server/hosts/host-protocol.js'

/** An admin token scoped to the admin project, or an unscoped one (no roles), issued by the server's token service. */
async function token(server: TestServer, scoped = true): Promise<string> {
  const issued = await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: scoped ? { p: server.bootstrap.adminProjectId } : null })
  return issued.token
}

for (const dialect of DIALECTS) {
  describe(`os-hypervisors and os-services (${dialect})`, () => {
    let server: TestServer
    let admin: string
    let api: ComputeClient
    let image: string
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '0', PCC_HOST_DOWN_AFTER_SECONDS: '2', PCC_HOST_HEARTBEAT_SECONDS: '1', PCC_RECONCILE_SECONDS: '0' } })
      admin = await token(server)
      api = new ComputeClient(server.url, admin)
      image = await api.bootImage()
    })

    /** Creates a server through the API and waits until it is placed and built (or failed). */
    async function boot(flavorRef = '1') {
      const { id } = await api.create({ name: 'on-host', imageRef: image, flavorRef, networks: 'none' })
      return until(`server ${id} built`, 20_000, async () => {
        const s = await api.server(id)
        return s && s.status !== 'BUILD' ? { id, host: s['OS-EXT-SRV-ATTR:host'] as string, status: s.status as string } : undefined
      }, 20)
    }
    after(() => server.close())

    const call = async (path: string, init: { method?: string; body?: unknown; version?: string; token?: string } = {}) => {
      const res = await fetch(`${server.url}/compute/v2.1${path}`, {
        method: init.method ?? 'GET',
        headers: {
          'x-auth-token': init.token ?? admin,
          ...(init.version && { 'openstack-api-version': `compute ${init.version}` }),
          ...(init.body !== undefined && { 'content-type': 'application/json' }),
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }

    it('lists the simulated hypervisors, up and enabled, with uuid ids from 2.53 and integers below', async () => {
      const latest = await call('/os-hypervisors', { version: '2.53' })
      assert.equal(latest.status, 200)
      assert.deepEqual(latest.body.hypervisors.map((h: { hypervisor_hostname: string }) => h.hypervisor_hostname).sort(), ['sim-host-1', 'sim-host-2'])
      for (const h of latest.body.hypervisors) {
        assert.match(h.id, /^[0-9a-f-]{36}$/)
        assert.equal(h.state, 'up')
        assert.equal(h.status, 'enabled')
      }
      const old = await call('/os-hypervisors')
      assert.deepEqual(old.body.hypervisors.map((h: { id: number }) => typeof h.id), ['number', 'number'])
    })

    it('lists a host only once its hypervisor role is applied (an onboarded host without it runs no compute service)', async () => {
      const host = await registerHost(server.deps.store.db, { hostname: 'no-role-yet', kind: 'agent', driver: 'qemu', vcpus: 4, memoryMb: 8192, diskGb: 100 })
      const names = async (path: string) => ((await call(path, { version: '2.53' })).body[path.includes('services') ? 'services' : 'hypervisors'] as { hypervisor_hostname?: string; host?: string }[]).map((h) => h.hypervisor_hostname ?? h.host)
      assert.ok(!(await names('/os-hypervisors')).includes('no-role-yet'))
      assert.ok(!(await names('/os-services')).includes('no-role-yet'))
      await setHostRole(server.deps.store.db, host.id, 'hypervisor', 'applying')
      assert.ok(!(await names('/os-hypervisors')).includes('no-role-yet'), 'not while the role is being applied')
      await setHostRole(server.deps.store.db, host.id, 'hypervisor', 'ok')
      assert.ok((await names('/os-hypervisors')).includes('no-role-yet'))
      const detail = await call(`/os-hypervisors/${host.id}`, { version: '2.53' })
      assert.equal(detail.body.hypervisor.hypervisor_type, 'QEMU')
      await server.deps.store.db.deleteFrom('host_roles').where('host_id', '=', host.id).execute()
      await server.deps.store.db.deleteFrom('hosts').where('id', '=', host.id).execute()
    })

    it('shows capacity and usage in the detail up to 2.87, uptime from 2.88', async () => {
      const final = await boot(await api.createFlavor({ name: 'c2-r2048-d20', vcpus: 2, ram: 2048, disk: 20 }))
      assert.equal(final.status, 'ACTIVE')
      const detail = await call('/os-hypervisors/detail', { version: '2.53' })
      const mine = detail.body.hypervisors.find((h: { hypervisor_hostname: string }) => h.hypervisor_hostname === final.host)
      assert.equal(mine.vcpus, 32)
      assert.equal(mine.vcpus_used, 2)
      assert.equal(mine.memory_mb_used, 2048)
      assert.equal(mine.local_gb_used, 20)
      assert.equal(mine.running_vms, 1)
      assert.equal(mine.free_ram_mb, 131072 - 2048)
      assert.equal(mine.hypervisor_type, 'fake', "a simulated host says what Nova's fake driver says")
      assert.equal(typeof mine.cpu_info, 'object')
      assert.equal(mine.service.host, final.host)
      assert.match(mine.host_ip, /^192\.0\.2\./)
      const v21 = await call('/os-hypervisors/detail')
      assert.equal(typeof v21.body.hypervisors[0].cpu_info, 'string')
      const v288 = await call(`/os-hypervisors/${mine.id}`, { version: '2.88' })
      assert.equal(v288.status, 200)
      assert.equal(v288.body.hypervisor.vcpus, undefined)
      assert.match(v288.body.hypervisor.uptime, /up \d+ days/)
      const withServers = await call(`/os-hypervisors/${mine.id}?with_servers=true`, { version: '2.53' })
      assert.deepEqual(withServers.body.hypervisor.servers.map((s: { uuid: string }) => s.uuid), [final.id])
      const stats = await call('/os-hypervisors/statistics')
      assert.equal(stats.body.hypervisor_statistics.count, 2)
      assert.equal(stats.body.hypervisor_statistics.vcpus_used, 2)
      assert.equal((await call('/os-hypervisors/statistics', { version: '2.88' })).status, 404)
      assert.equal((await call('/os-hypervisors/not-a-uuid', { version: '2.53' })).status, 400)
      assert.equal((await call('/os-hypervisors/00000000-0000-0000-0000-000000000000', { version: '2.53' })).status, 404)
    })

    it('filters hypervisors by hostname pattern (2.53) and pages them (2.33)', async () => {
      const one = await call('/os-hypervisors?hypervisor_hostname_pattern=host-2', { version: '2.53' })
      assert.deepEqual(one.body.hypervisors.map((h: { hypervisor_hostname: string }) => h.hypervisor_hostname), ['sim-host-2'])
      assert.equal((await call('/os-hypervisors?hypervisor_hostname_pattern=nomatch', { version: '2.53' })).status, 404)
      const page = await call('/os-hypervisors?limit=1', { version: '2.53' })
      assert.equal(page.body.hypervisors.length, 1)
      const next = await call(`/os-hypervisors?limit=1&marker=${page.body.hypervisors[0].id}`, { version: '2.53' })
      assert.equal(next.body.hypervisors.length, 1)
      assert.notEqual(next.body.hypervisors[0].id, page.body.hypervisors[0].id)
    })

    it('lists compute services and lets an admin disable one; the scheduler then avoids it', async () => {
      const list = await call('/os-services', { version: '2.53' })
      assert.equal(list.body.services.length, 2)
      const svc = list.body.services.find((s: { host: string }) => s.host === 'sim-host-1')
      assert.equal(svc.binary, 'nova-compute')
      assert.equal(svc.zone, 'nova')
      assert.equal(svc.state, 'up')
      assert.equal(svc.forced_down, false)
      assert.match(svc.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/)
      const off = await call(`/os-services/${svc.id}`, { method: 'PUT', version: '2.53', body: { status: 'disabled', disabled_reason: 'maintenance' } })
      assert.equal(off.status, 200)
      assert.equal(off.body.service.status, 'disabled')
      assert.equal(off.body.service.disabled_reason, 'maintenance')
      try {
        for (const final of await Promise.all([1, 2, 3].map(() => boot()))) assert.equal(final.host, 'sim-host-2')
      } finally {
        const on = await call(`/os-services/${svc.id}`, { method: 'PUT', version: '2.53', body: { status: 'enabled' } })
        assert.equal(on.body.service.status, 'enabled')
        assert.equal(on.body.service.disabled_reason, null)
      }
      const bad = await call(`/os-services/${svc.id}`, { method: 'PUT', version: '2.53', body: { status: 'sleepy' } })
      assert.equal(bad.status, 400)
      assert.match(bad.body.badRequest.message, /status/)
      assert.equal((await call(`/os-services/${svc.id}`, { method: 'PUT', version: '2.53', body: { disabled_reason: 'x' } })).status, 400)
    })

    it('supports the pre-2.53 enable/disable/force-down forms', async () => {
      const dis = await call('/os-services/disable-log-reason', { method: 'PUT', version: '2.11', body: { host: 'sim-host-2', binary: 'nova-compute', disabled_reason: 'rack move' } })
      assert.equal(dis.status, 200)
      assert.deepEqual(dis.body, { service: { host: 'sim-host-2', binary: 'nova-compute', status: 'disabled', disabled_reason: 'rack move' } })
      const down = await call('/os-services/force-down', { method: 'PUT', version: '2.11', body: { host: 'sim-host-2', binary: 'nova-compute', forced_down: true } })
      assert.deepEqual(down.body, { service: { host: 'sim-host-2', binary: 'nova-compute', forced_down: true } })
      const listed = await call('/os-services?host=sim-host-2', { version: '2.11' })
      assert.equal(listed.body.services[0].state, 'down')
      assert.equal(listed.body.services[0].forced_down, true)
      await call('/os-services/force-down', { method: 'PUT', version: '2.11', body: { host: 'sim-host-2', binary: 'nova-compute', forced_down: false } })
      const en = await call('/os-services/enable', { method: 'PUT', body: { host: 'sim-host-2', binary: 'nova-compute' } })
      assert.deepEqual(en.body, { service: { host: 'sim-host-2', binary: 'nova-compute', status: 'enabled' } })
      assert.equal((await call('/os-services/enable', { method: 'PUT', body: { host: 'nope', binary: 'nova-compute' } })).status, 404)
    })

    it('a host that stops heartbeating goes down after the timeout', async () => {
      const sim = server.deps.conductor.simulatedHosts.find((h) => h.hostname === 'sim-host-2')!
      sim.stop()
      const deadline = Date.now() + 8000
      let state = 'up'
      while (state === 'up' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250))
        state = (await call('/os-services?host=sim-host-2')).body.services[0].state
      }
      assert.equal(state, 'down')
      const row = await server.deps.store.db.selectFrom('hosts').selectAll().where('hostname', '=', 'sim-host-2').executeTakeFirstOrThrow()
      assert.equal(hostStatus(row, Date.now(), 2000), 'DOWN')
      assert.equal(await server.deps.conductor.hostStatus('sim-host-2'), 'DOWN')
      assert.equal(await server.deps.conductor.hostStatus('sim-host-1'), 'UP')
      assert.equal(await server.deps.conductor.hostStatus(null), '')
      assert.equal((await boot()).host, 'sim-host-1', 'the scheduler skips the DOWN host')
    })

    it('is admin only: 401 without a token, 403 for a token without the admin role', async () => {
      const res = await fetch(`${server.url}/compute/v2.1/os-hypervisors`)
      assert.equal(res.status, 401)
      const unscoped = await token(server, false)
      assert.equal((await call('/os-hypervisors', { token: unscoped })).status, 403)
      assert.equal((await call('/os-services', { token: unscoped })).status, 403)
    })
  })
}

describe('host_status', () => {
  const base = { forced_down: 0, last_heartbeat_at: 1000, service_status: 'enabled' as const }
  it('is UP, DOWN, MAINTENANCE or UNKNOWN from the heartbeat age, forced_down and the service status', () => {
    assert.equal(hostStatus(base, 2000, 60_000), 'UP')
    assert.equal(hostStatus(base, 1000 + 60_001, 60_000), 'DOWN')
    assert.equal(hostStatus({ ...base, forced_down: 1 }, 2000, 60_000), 'DOWN')
    assert.equal(hostStatus({ ...base, service_status: 'disabled' }, 2000, 60_000), 'MAINTENANCE')
    assert.equal(hostStatus({ ...base, last_heartbeat_at: null }, 2000, 60_000), 'UNKNOWN')
  })
})
