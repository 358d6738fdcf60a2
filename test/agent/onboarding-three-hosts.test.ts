/**
 * Issue 10's end-to-end run: a control plane and three agents as separate processes, each onboarded with
 * `pcctl prep-node` into its own scratch root, authorized as hypervisors; servers spread by an anti-affinity
 * group; one agent SIGKILLed → its host DOWN → its server evacuated; the agent restarted by prep-node comes back
 * with the evacuated server's stale guest, and reconciliation makes it let the guest go; then deauthorize and
 * decommission. The group has two members on three hosts: the third host is where the evacuation can go
 * without breaking the group's rule. Each host is its own network namespace joined to the control plane by a
 * veth pair and a bridge (testkit/netns.ts), and pcctl runs as a real process inside it, so the agent it starts
 * lives there too and every request crosses an interface; where the machine cannot make namespaces, the hosts
 * share its network stack and the test says so.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { hostIdOf, stageHostRoot } from '../../src/testkit/host-root.js'
import { createTestNetwork, type TestHostNetwork, type TestNetwork } from '../../src/testkit/netns.js'

const MICROVERSION = { 'openstack-api-version': 'compute 2.96' }
const PCCTL = fileURLToPath(new URL('../../release/pcctl.mjs', import.meta.url))

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** The released pcctl as its own process, inside the host's namespace (if any), so what it starts stays there. */
function runPcctl(net: TestHostNetwork, env: Record<string, string>, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const command = [...net.exec, process.execPath, PCCTL, ...args]
    const child = spawn(command[0], command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

describe('three onboarded agents run, lose and recover servers', () => {
  let server: TestServer
  let token: string
  let network: TestNetwork
  let home: string
  const roots: string[] = []
  const hostNets = new Map<string, TestHostNetwork>()
  let env: Record<string, string>

  before(async () => {
    network = createTestNetwork(3)
    if (network.sharedBecause) console.log(`# hosts share the machine's network: ${network.sharedBecause}`)
    server = await startTestServer({
      publicUrlFromListen: true,
      listenAddress: network.gateway,
      env: { PCC_HOST_DOWN_AFTER_SECONDS: '12', PCC_RECONCILE_SECONDS: '1', PCC_TASK_LEASE_SECONDS: '10' },
    })
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    home = mkdtempSync(join(tmpdir(), 'pcctl-home-'))
    env = { PATH: process.env.PATH ?? '', HOME: home, OS_AUTH_URL: `${server.url}/identity/v3`, OS_USERNAME: 'admin', OS_PASSWORD: ADMIN_PASSWORD, OS_PROJECT_NAME: 'admin' }
  })
  after(async () => {
    for (const root of roots) {
      if (!existsSync(join(root, 'run/pcc-agent.pid'))) continue
      const pid = Number(readFileSync(join(root, 'run/pcc-agent.pid'), 'utf8').trim() || 0)
      try {
        if (pid) process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    await server?.close()
    network?.close()
    for (const root of [...roots, home]) if (root) rmSync(root, { recursive: true, force: true })
  })

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, ...MICROVERSION, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const pcctl = (root: string, ...args: string[]) => runPcctl(hostNets.get(root)!, { ...env, PCCTL_HOST_ROOT: root }, args)
  /** The guests an agent holds, from its state file on the host (what it reloads when it starts). */
  const guestsOnDisk = (root: string) => (JSON.parse(readFileSync(join(root, 'var/lib/pcc/agent-state.json'), 'utf8')) as { guests: { serverId: string }[] }).guests.map((g) => g.serverId)
  const showServer = async (id: string) => (await api('GET', `/compute/v2.1/servers/${id}`)).body.server

  it('onboards three hosts with prep-node and makes them hypervisors with authorize-node', async () => {
    for (const [i, name] of ['node-a', 'node-b', 'node-c'].entries()) {
      const root = stageHostRoot({ hostname: name })
      roots.push(root)
      hostNets.set(root, network.hosts[i])
      const prep = await pcctl(root, 'prep-node', '--no-prompt')
      assert.equal(prep.code, 0, prep.stderr)
      const auth = await pcctl(root, 'authorize-node', '--role', 'hypervisor')
      assert.equal(auth.code, 0, auth.stderr)
    }
    const hypervisors = (await api('GET', '/compute/v2.1/os-hypervisors/detail')).body.hypervisors as { hypervisor_hostname: string; host_ip: string }[]
    assert.deepEqual(hypervisors.map((h) => h.hypervisor_hostname).sort(), ['node-a', 'node-b', 'node-c'])
    if (!network.sharedBecause) {
      // Each agent reports the address of its own namespace's interface: it runs there, not on the machine's stack.
      const ips = Object.fromEntries(hypervisors.map((h) => [h.hypervisor_hostname, h.host_ip]))
      assert.deepEqual(ips, { 'node-a': network.hosts[0].address, 'node-b': network.hosts[1].address, 'node-c': network.hosts[2].address })
    }
  })

  let group: string
  const servers: string[] = []
  it('spreads an anti-affinity group over different agent hosts', async () => {
    group = (await api('POST', '/compute/v2.1/os-server-groups', { server_group: { name: 'spread', policy: 'anti-affinity' } })).body.server_group.id
    const flavor = (await api('GET', '/compute/v2.1/flavors')).body.flavors[0].id
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    for (const name of ['web-1', 'web-2']) {
      const created = await api('POST', '/compute/v2.1/servers', { server: { name, flavorRef: flavor, imageRef: image, networks: 'none' }, 'os:scheduler_hints': { group } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      servers.push(created.body.server.id)
    }
    const placed = await until('servers ACTIVE', 60_000, async () => {
      const all = await Promise.all(servers.map(showServer))
      return all.every((s) => s.status === 'ACTIVE') ? all : undefined
    })
    const hosts = placed.map((s) => s['OS-EXT-SRV-ATTR:host'])
    assert.equal(new Set(hosts).size, 2, `on different hosts: ${hosts}`)
  })

  it('sees a SIGKILLed agent\'s host go DOWN and evacuates its server to the free host', async () => {
    const victim = await showServer(servers[0])
    const root = roots.find((r) => readFileSync(join(r, 'etc/hostname'), 'utf8').trim() === victim['OS-EXT-SRV-ATTR:host'])!
    process.kill(Number(readFileSync(join(root, 'run/pcc-agent.pid'), 'utf8').trim()), 'SIGKILL')
    await until('host_status DOWN', 40_000, async () => ((await showServer(servers[0])).host_status === 'DOWN' ? true : undefined))

    const evacuate = await api('POST', `/compute/v2.1/servers/${servers[0]}/action`, { evacuate: {} })
    assert.equal(evacuate.status, 200, JSON.stringify(evacuate.body))
    const moved = await until('evacuated server ACTIVE', 60_000, async () => {
      const s = await showServer(servers[0])
      return s.status === 'ACTIVE' && s['OS-EXT-SRV-ATTR:host'] !== victim['OS-EXT-SRV-ATTR:host'] ? s : undefined
    })
    const other = (await showServer(servers[1]))['OS-EXT-SRV-ATTR:host']
    assert.notEqual(moved['OS-EXT-SRV-ATTR:host'], other, 'anti-affinity still holds after evacuation')

    // The dead host still holds the evacuated server's guest: its agent saved it before it was killed.
    assert.deepEqual(guestsOnDisk(root), [servers[0]], 'the killed host kept the guest it ran')

    // prep-node again restarts the dead agent (idempotent onboarding). The agent comes back with the stale guest;
    // reconciliation (every second here) sees a guest of a server that lives elsewhere now and tells the agent
    // to let it go: a `forget` command for that server, executed by the agent.
    const hostId = hostIdOf(root)
    const again = await pcctl(root, 'prep-node', '--no-prompt')
    assert.equal(again.code, 0, again.stderr)
    const forget = await until('the conductor to tell the returning agent to forget the stale guest', 60_000, async () => {
      return server.deps.store.db
        .selectFrom('host_commands')
        .select(['status', 'finished_at'])
        .where('host_id', '=', hostId)
        .where('op', '=', 'forget')
        .where('dedupe_key', 'like', `forget:${servers[0]}:%`)
        .where('status', '=', 'done')
        .executeTakeFirst()
    })
    assert.ok(forget.finished_at, 'the agent answered the forget command')
    // The host's truth afterwards: the agent holds no guest and says so in its heartbeat.
    await until('the agent to hold no guest', 20_000, async () => (guestsOnDisk(root).length === 0 ? true : undefined))
    await until('the agent to report no guest', 20_000, async () => {
      const report = await server.deps.store.db.selectFrom('agent_hosts').select('guests').where('host_id', '=', hostId).executeTakeFirstOrThrow()
      return (JSON.parse(report.guests) as unknown[]).length === 0 ? true : undefined
    })
    const hypervisors = (await api('GET', '/compute/v2.1/os-hypervisors/detail')).body.hypervisors as { hypervisor_hostname: string; state: string }[]
    assert.equal(hypervisors.find((x) => x.hypervisor_hostname === victim['OS-EXT-SRV-ATTR:host'])?.state, 'up')
    assert.deepEqual((await api('GET', `/compute/v2.1/servers/detail?all_tenants=1&host=${victim['OS-EXT-SRV-ATTR:host']}`)).body.servers, [])
    // The evacuated server was left alone: still ACTIVE on the host it moved to.
    const after = await showServer(servers[0])
    assert.equal(after.status, 'ACTIVE')
    assert.equal(after['OS-EXT-SRV-ATTR:host'], moved['OS-EXT-SRV-ATTR:host'])
    assert.equal(after.fault, undefined)
  })

  it('deauthorizes and decommissions the empty host, removing its record and files', async () => {
    const used = new Set(await Promise.all(servers.map(async (id) => (await showServer(id))['OS-EXT-SRV-ATTR:host'])))
    const root = roots.find((r) => !used.has(readFileSync(join(r, 'etc/hostname'), 'utf8').trim()))!
    const id = hostIdOf(root)
    const deauth = await pcctl(root, 'deauthorize-node', '-t', '1m')
    assert.equal(deauth.code, 0, deauth.stderr)
    assert.deepEqual((await api('GET', `/resmgr/v1/hosts/${id}`)).body.roles, [])
    const decommission = await pcctl(root, 'decommission-node')
    assert.equal(decommission.code, 0, decommission.stderr)
    assert.equal((await api('GET', `/resmgr/v1/hosts/${id}`)).status, 404)
    for (const path of ['opt/pcc', 'etc/pcc', 'var/log/pcc', 'run/pcc-agent.pid']) assert.equal(existsSync(join(root, path)), false, `${path} removed`)
  })
})
