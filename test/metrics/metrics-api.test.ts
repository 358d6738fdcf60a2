/**
 * The metrics APIs against a real pcc (docs/metrics.md): Nova's server diagnostics (both shapes, admin only), pcc's
 * server and host metrics history, the guests and hosts on /metrics, a project's isolation, samples accepted
 * only from the host's own credential and only for its own guests, and a deleted server's history gone.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { call, computeTestbed, createBody, type ComputeTestbed } from '../compute/helpers.js'
import { until } from '../../src/testkit/compute-api.js'
import { DIALECTS } from '../../src/testkit/harness.js'
import { sampleSimulatedHost } from '../../src/server/all-in-one/simulated-hosts.js'
import type { SimulatedDriver } from '../../src/host/compute/simulated/simulated-driver.js'
import { LOAD } from '../../src/host/compute/simulated/simulated-metrics.js'
import type { GuestSample, HostSample } from '../../src/contracts/host/metrics.js'

const METRICS_TOKEN = 'scrape-token-of-the-test-0123456789'

for (const dialect of DIALECTS) {
  describe(`metrics APIs (${dialect})`, () => {
    let tb: ComputeTestbed
    let id: string
    let hostId: string
    const resmgr = async (method: string, path: string, auth: { token?: string; credential?: string }, body?: unknown) => {
      const headers: Record<string, string> = {
        ...(auth.credential && { authorization: `Bearer ${auth.credential}` }),
        ...(auth.token && { 'x-auth-token': auth.token }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
      }
      const res = await fetch(`${tb.server.url}/resmgr${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    const register = async () => {
      const token = (await resmgr('POST', '/v1/registration-tokens', { token: tb.admin.token }, {})).body.token as string
      const hostId = randomUUID()
      const reg = await resmgr('POST', '/v1/hosts/register', {}, {
        registration_token: token, host_id: hostId, hostname: `metered-${hostId.slice(0, 6)}`, os_info: { id: 'debian', version_id: '12', pretty_name: 'Debian' }, arch: 'x86_64',
        cpu: { count: 4, model: 'x', virtualization: true }, memory_mb: 8000, disk_gb: 100, nics: [], agent_version: '0.1.0', protocol_version: 3,
      })
      assert.equal(reg.status, 201, JSON.stringify(reg.body))
      return { id: hostId, credential: reg.body.credential as string }
    }
    const hostSample = (at: number): HostSample => ({ at, cpuBusy: 100, cpuTotal: 400, cpus: 4, memoryTotalKb: 8_000_000, memoryUsedKb: 1_000_000, diskUsedBytes: 1e9, diskTotalBytes: 1e10, guests: 0, accelerator: 'kvm' })
    const slots = async (subjectId: string) => (await tb.server.deps.store.db.selectFrom('metric_slots').select('slot').where('subject_id', '=', subjectId).execute()).length

    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0', PCC_METRICS_TOKEN: METRICS_TOKEN }, true)
      const created = await call(tb, tb.member, 'POST', '/servers', createBody('metered'), '2.96')
      assert.equal(created.status, 202, JSON.stringify(created.body))
      id = created.body.server.id
      await until('the server ACTIVE', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server.status === 'ACTIVE' ? true : undefined))
      hostId = (await tb.server.deps.store.db.selectFrom('servers').select('host_id').where('id', '=', id).executeTakeFirstOrThrow()).host_id!
      // Two samples a second apart, as the host's 10 s sampler takes them, so the history has rates.
      const driver = tb.server.deps.conductor.drivers.get(hostId) as SimulatedDriver
      const startedAt = Date.now() - 1000
      await sampleSimulatedHost(tb.server.deps.store, hostId, driver, startedAt)
      await new Promise((resolve) => setTimeout(resolve, 1100))
      await sampleSimulatedHost(tb.server.deps.store, hostId, driver, startedAt)
    })
    after(() => tb?.close())

    it('answers diagnostics in the 2.48 shape from the latest sample, to admins', async () => {
      const r = await call(tb, tb.admin, 'GET', `/servers/${id}/diagnostics`, undefined, '2.48')
      assert.equal(r.status, 200, JSON.stringify(r.body))
      const d = r.body
      assert.equal(d.state, 'running')
      assert.equal(d.driver, 'libvirt')
      assert.equal(d.hypervisor, 'fake')
      assert.equal(d.num_cpus, 1)
      assert.equal(d.num_disks, 1)
      assert.deepEqual(Object.keys(d.memory_details).sort(), ['maximum', 'used'])
      assert.equal(d.memory_details.used, Math.round((d.memory_details.maximum * 1024 * LOAD.memoryShare) / 1024))
      assert.ok(d.cpu_details[0].time > 0)
      assert.ok(Math.abs(d.cpu_details[0].utilisation - LOAD.cpuShare * 100) <= 2, `utilisation ${d.cpu_details[0].utilisation}`)
      assert.ok(d.disk_details[0].read_bytes > 0 && d.disk_details[0].write_bytes > 0)
    })

    it('answers the flat counters before 2.48; refuses project members (403) and hides another project (404)', async () => {
      const r = await call(tb, tb.admin, 'GET', `/servers/${id}/diagnostics`, undefined, '2.1')
      assert.equal(r.status, 200)
      assert.ok(r.body.memory > 0 && r.body.vda_read > 0 && r.body.cpu_time > 0, JSON.stringify(r.body))
      const member = await call(tb, tb.member, 'GET', `/servers/${id}/diagnostics`, undefined, '2.48')
      assert.equal(member.status, 403)
      assert.match(member.body.forbidden.message, /os-server-diagnostics|servers:diagnostics/)
      const other = await call(tb, tb.other, 'GET', `/servers/${id}/diagnostics`, undefined, '2.48')
      assert.equal(other.status, 404)
    })

    it("answers the server's history to its project, 404 to another, 400 for an unknown range", async () => {
      for (const who of [tb.member, tb.reader]) {
        const r = await call(tb, who, 'GET', `/servers/${id}/metrics?range=hour`)
        assert.equal(r.status, 200, JSON.stringify(r.body))
        assert.equal(r.body.metrics.step_seconds, 10)
        const last = r.body.metrics.points.at(-1)
        assert.ok(Math.abs(last.cpu_vcpus - LOAD.cpuShare) < 0.05, `cpu ${last.cpu_vcpus}`)
        assert.ok(Math.abs(last.disk_read_bytes_per_second - LOAD.readBps) < LOAD.readBps * 0.1)
        assert.ok(last.memory_bytes > 0)
      }
      const day = await call(tb, tb.member, 'GET', `/servers/${id}/metrics?range=week`)
      assert.equal(day.body.metrics.step_seconds, 300)
      assert.equal(day.body.metrics.points.length, 1)
      assert.equal((await call(tb, tb.other, 'GET', `/servers/${id}/metrics`)).status, 404)
      const bad = await call(tb, tb.member, 'GET', `/servers/${id}/metrics?range=decade`)
      assert.equal(bad.status, 400)
      assert.match(bad.body.badRequest.message, /range/)
    })

    it("answers a host's history to admins only", async () => {
      const r = await resmgr('GET', `/v1/hosts/${hostId}/metrics?range=hour`, { token: tb.admin.token })
      assert.equal(r.status, 200, JSON.stringify(r.body))
      const last = r.body.metrics.points.at(-1)
      assert.equal(last.guests, 1)
      assert.ok(last.cpu_cpus > 0)
      assert.equal((await resmgr('GET', `/v1/hosts/${hostId}/metrics`, { token: tb.member.token })).status, 403)
      assert.equal((await resmgr('GET', `/v1/hosts/${randomUUID()}/metrics`, { token: tb.admin.token })).status, 404)
      assert.equal((await resmgr('GET', `/v1/hosts/${hostId}/metrics?range=decade`, { token: tb.admin.token })).status, 400)
    })

    it('exposes every guest and host on /metrics to the holder of the metrics token, labelled with server, project and host', async () => {
      const open = await (await fetch(`${tb.server.url}/metrics`)).text()
      assert.match(open, /^pcc_http_requests_total|^# HELP/m, 'the process metrics stay open')
      assert.doesNotMatch(open, /pcc_guest_|pcc_host_/, 'no guest or host without the token')
      const wrong = await fetch(`${tb.server.url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token' } })
      assert.equal(wrong.status, 401)
      assert.doesNotMatch(await wrong.text(), /pcc_guest_/)
      assert.equal((await fetch(`${tb.server.url}/metrics`, { headers: { authorization: `Bearer ${tb.admin.token}` } })).status, 401, 'a Keystone token is not the metrics token')
      const text = await (await fetch(`${tb.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
      const line = text.split('\n').find((l) => l.startsWith('pcc_guest_cpu_seconds_total{') && l.includes(id))
      assert.ok(line, 'the guest has a CPU series')
      assert.match(line, new RegExp(`server_id="${id}",project_id="${tb.member.projectId}",host="sim-host-1"\\} [0-9.e+-]+$`))
      assert.match(text, /^pcc_host_guests\{host_id="[^"]+",host="sim-host-1"\} 1$/m)
      assert.match(text, /^# TYPE pcc_guest_disk_write_bytes_total counter$/m)
    })

    it("takes a host's samples only with its own credential, and only for its own guests", async () => {
      const a = await register()
      const b = await register()
      const before = (await tb.server.deps.store.db.selectFrom('metric_latest').select('at').where('subject_id', '=', id).executeTakeFirstOrThrow()).at
      const foreign: GuestSample = { serverId: id, at: Date.now(), state: 'running', vcpus: 1, cpuNs: 1, uptimeS: 1, memoryMaxKb: 1, memoryUsedKb: 1, disks: [], nics: [] }
      const samples = { host: hostSample(Date.now()), guests: [foreign] }
      assert.equal((await resmgr('POST', `/v1/hosts/${a.id}/heartbeat`, { credential: b.credential }, { samples })).status, 403, "another host's credential")
      assert.equal(await slots(a.id), 0)
      const ok = await resmgr('POST', `/v1/hosts/${a.id}/heartbeat`, { credential: a.credential }, { samples })
      assert.equal(ok.status, 200, JSON.stringify(ok.body))
      assert.ok((await slots(a.id)) > 0, "the host's own sample is kept")
      const after = (await tb.server.deps.store.db.selectFrom('metric_latest').select('at').where('subject_id', '=', id).executeTakeFirstOrThrow()).at
      assert.equal(Number(after), Number(before), "a sample for another host's guest is dropped")
      const bad = await resmgr('POST', `/v1/hosts/${a.id}/heartbeat`, { credential: a.credential }, { samples: { host: { ...hostSample(Date.now()), cpuBusy: -1 }, guests: [] } })
      assert.equal(bad.status, 400)
    })

    it("deletes a server's history with the server", async () => {
      assert.ok((await slots(id)) > 0)
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}`)).status, 204)
      await until('the server gone', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`)).status === 404 ? true : undefined))
      assert.equal(await slots(id), 0)
      assert.equal(await tb.server.deps.store.db.selectFrom('metric_latest').select('at').where('subject_id', '=', id).executeTakeFirst(), undefined)
    })
  })
}
