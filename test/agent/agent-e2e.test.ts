import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { agentConfig, killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { hostStatus } from '../../src/server/hosts/host-status.js'
import type { GuestInfo } from '../../src/contracts/host/compute-driver.js'

describe('pcc-agent end to end: onboarding, servers, loss and return of the host', () => {
  let server: TestServer
  let admin: string
  let api: ComputeClient
  let image: string
  let host: ScratchHost
  let agent: ChildProcess | undefined
  before(async () => {
    server = await startTestServer({
      publicUrlFromListen: true,
      env: { PCC_HOST_DOWN_AFTER_SECONDS: '3', PCC_HOST_HEARTBEAT_SECONDS: '1', PCC_RECONCILE_SECONDS: '0', PCC_SIMULATED_DELAY_MS: '5', PCC_TASK_LEASE_SECONDS: '5' },
    })
    admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, admin)
    image = await api.bootImage()
  })
  after(async () => {
    if (agent) await killAgent(agent)
    await server.close()
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': admin, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const db = () => server.deps.store.db
  /** Waits until the server rests (no task state, not building) and returns its view. */
  const settled = (id: string) =>
    until(`server ${id} to settle`, 20_000, async () => {
      const s = await api.server(id)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    })
  const reportedGuests = async () => {
    const row = await db().selectFrom('agent_hosts').select('guests').where('host_id', '=', host.hostId).executeTakeFirst()
    return (row ? JSON.parse(row.guests) : []) as GuestInfo[]
  }
  /** Whether the host's agent has beaten since `at`. */
  const beatSince = async (at: number) => {
    const row = await db().selectFrom('hosts').select('last_heartbeat_at').where('id', '=', host.hostId).executeTakeFirst()
    return (row?.last_heartbeat_at ?? 0) >= at
  }

  it('registers with its token, keeps the credential 0600 and reports its facts', async () => {
    const { body: t } = await call('POST', '/resmgr/v1/registration-tokens', { note: 'e2e' })
    host = scratchHost({ hostname: 'agent-host-1', controller: server.url, registrationToken: t.token })
    agent = spawnAgent(host.root)
    const view = await until('the host registered', 20_000, async () => {
      const r = await call('GET', `/resmgr/v1/hosts/${host.hostId}`)
      return r.status === 200 ? r.body : undefined
    })
    assert.equal(view.info.hostname, 'agent-host-1')
    assert.equal(view.info.os_info, 'Debian GNU/Linux 12 (bookworm)')
    assert.equal(view.info.cpu_info.count, 4)
    assert.equal(view.info.cpu_info.virtualization, true)
    assert.deepEqual(view.extensions.interfaces.data.bond0.bond, { mode: 'IEEE 802.3ad Dynamic link aggregation', slaves: ['eth0', 'eth1'] })
    assert.equal(view.info.responding, true)
    assert.deepEqual(view.roles, [])
    const config = await until('the credential saved', 20_000, async () => (agentConfig(host.root).credential ? agentConfig(host.root) : undefined), 20)
    assert.equal(config.registration_token, undefined)
    assert.match(String(config.credential), /^pcch_/)
    assert.equal(statSync(join(host.root, 'etc/pcc/agent.json')).mode & 0o777, 0o600)
    assert.equal(readFileSync(join(host.root, 'run/pcc-agent.pid'), 'utf8').trim(), String(agent.pid))
    assert.ok(existsSync(join(host.root, 'var/log/pcc/agent.log')))
    assert.ok(!readFileSync(join(host.root, 'var/log/pcc/agent.log'), 'utf8').includes(String(config.credential)), 'the credential is never logged')
    // The token was used up.
    const again = await fetch(`${server.url}/resmgr/v1/hosts/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ registration_token: t.token }) })
    assert.equal(again.status, 400)
    const row = await db().selectFrom('registration_tokens').select('used_at').where('id', '=', t.id).executeTakeFirstOrThrow()
    assert.notEqual(row.used_at, null)
  })

  it('applies the hypervisor role, shows in os-hypervisors and runs a server to ACTIVE', async () => {
    assert.equal((await call('PUT', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`, {})).status, 200)
    await until('the hypervisor role applied', 20_000, async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.role_status === 'ok' ? true : undefined))
    const hyps = await call('GET', '/compute/v2.1/os-hypervisors/detail')
    const mine = hyps.body.hypervisors.find((h: { hypervisor_hostname: string }) => h.hypervisor_hostname === 'agent-host-1')
    assert.ok(mine, 'the agent host is a hypervisor')
    assert.equal(mine.state, 'up')
    assert.equal(mine.vcpus, 8)

    const { id } = await api.create({ name: 'on-agent', imageRef: image, flavorRef: '1', networks: 'none' })
    const s = await settled(id)
    assert.equal(s.status, 'ACTIVE', JSON.stringify(s.fault))
    assert.equal(s['OS-EXT-SRV-ATTR:host'], 'agent-host-1')
    assert.equal(s['OS-EXT-STS:power_state'], 1)
    // The guest lives on the agent: its heartbeat reports it.
    await until('the agent to report the guest', 10_000, async () => ((await reportedGuests()).some((g) => g.serverId === id) ? true : undefined))
    const hyp = await call('GET', '/compute/v2.1/os-hypervisors/detail')
    assert.equal(hyp.body.hypervisors.find((h: { hypervisor_hostname: string }) => h.hypervisor_hostname === 'agent-host-1').running_vms, 1)
  })

  it('SIGKILL: the host goes DOWN, its server is evacuated; on return the agent reports the stale guest and reconciliation lets it go', async () => {
    const [victim] = await api.servers('host=agent-host-1')
    await killAgent(agent!)
    agent = undefined
    await until('the host not responding', 10_000, async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.info.responding === false ? true : undefined), 200)
    const hostRow = await db().selectFrom('hosts').selectAll().where('id', '=', host.hostId).executeTakeFirstOrThrow()
    assert.equal(hostStatus(hostRow, Date.now(), 3000), 'DOWN')
    const services = await call('GET', '/compute/v2.1/os-services')
    assert.equal(services.body.services.find((x: { host: string }) => x.host === 'agent-host-1').state, 'down')
    assert.equal((await api.server(victim.id))!.host_status, 'DOWN')

    await server.deps.conductor.addSimulatedHost({ hostname: 'rescue-host' })
    const evacuate = await api.action(victim.id, 'evacuate', {})
    assert.equal(evacuate.status, 200, JSON.stringify(evacuate.body))
    const moved = await settled(victim.id)
    assert.equal(moved.status, 'ACTIVE')
    assert.equal(moved['OS-EXT-SRV-ATTR:host'], 'rescue-host')

    agent = spawnAgent(host.root)
    await until('the host responding again', 15_000, async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.info.responding === true ? true : undefined))
    // It still holds the guest it ran before it died, and says so.
    await until('the returning agent to report the stale guest', 10_000, async () => ((await reportedGuests()).some((g) => g.serverId === victim.id) ? true : undefined))
    const report = await server.deps.conductor.reconcile()
    assert.equal(report.guestsReleased, 1)
    assert.equal(report.erroredLostHost, 0)
    await until('the agent to report no guest', 10_000, async () => ((await reportedGuests()).length === 0 ? true : undefined))
    assert.equal((await api.server(victim.id))!['OS-EXT-SRV-ATTR:host'], 'rescue-host')
  })

  it('a server survives an agent restart: reconciliation finds its guest, nothing is lost', async () => {
    // Forced onto the agent host (admin's zone:host form).
    const { id } = await api.create({ name: 'survivor', imageRef: image, flavorRef: '1', networks: 'none', availability_zone: 'nova:agent-host-1' })
    assert.equal((await settled(id)).status, 'ACTIVE')
    await killAgent(agent!)
    // The killed agent's last report names the guest too: only the restarted agent's own report counts.
    const restarted = Date.now()
    agent = spawnAgent(host.root)
    await until('the restarted agent to beat', 15_000, async () => ((await beatSince(restarted)) ? true : undefined))
    await until('the restarted agent to report the guest', 15_000, async () => ((await reportedGuests()).some((g) => g.serverId === id) ? true : undefined))
    const report = await server.deps.conductor.reconcile()
    assert.equal(report.erroredLostHost, 0)
    assert.equal(report.guestsReleased, 0)
    const s = (await api.server(id))!
    assert.equal(s.status, 'ACTIVE')
    assert.equal(s['OS-EXT-SRV-ATTR:host'], 'agent-host-1')
    // The restarted agent still executes work for it.
    assert.equal((await api.action(id, 'os-stop')).status, 202)
    const stopped = await settled(id)
    assert.equal(stopped.status, 'SHUTOFF')
    assert.equal(stopped['OS-EXT-STS:power_state'], 4)
  })

  it('the hypervisor role cannot be removed while servers run unless forced; the agent confirms the removal', async () => {
    assert.equal((await call('DELETE', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`)).status, 409)
    assert.equal((await call('DELETE', `/resmgr/v1/hosts/${host.hostId}`)).status, 409)
    assert.equal((await call('DELETE', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor?force=true`)).status, 200)
    await until('the role removed', 10_000, async () => ((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.roles.length === 0 ? true : undefined))
    assert.equal((await call('DELETE', `/resmgr/v1/hosts/${host.hostId}?force=true`)).status, 200)
    // A graceful stop removes the pid file.
    await killAgent(agent!, 'SIGTERM')
    agent = undefined
    assert.equal(existsSync(join(host.root, 'run/pcc-agent.pid')), false)
    assert.equal((await call('GET', `/resmgr/v1/hosts/${host.hostId}`)).status, 404)
    assert.equal(server.deps.conductor.drivers.get(host.hostId), undefined)
  })
})
