/**
 * Issue 10's end-to-end run: a control plane and three agents as separate processes, each onboarded with
 * `pcctl prep-node` into its own scratch root, authorized as hypervisors; servers spread by an anti-affinity
 * group; one agent SIGKILLed → its host DOWN → its server evacuated; the agent restarted by prep-node →
 * reconciliation; then deauthorize and decommission. (Each host shares the machine's network stack: no network
 * namespaces here.)
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { cliSandbox, type CliSandbox } from '../../src/testkit/cli.js'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { stageHostRoot } from '../../src/testkit/host-root.js'

const MICROVERSION = { 'openstack-api-version': 'compute 2.96' }

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
  let cli: CliSandbox
  const roots: string[] = []
  let env: Record<string, string>

  before(async () => {
    server = await startTestServer({
      publicUrlFromListen: true,
      env: { PCC_HOST_DOWN_AFTER_SECONDS: '12', PCC_RECONCILE_SECONDS: '1', PCC_TASK_LEASE_SECONDS: '10' },
    })
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    cli = cliSandbox()
    env = { OS_AUTH_URL: `${server.url}/identity/v3`, OS_USERNAME: 'admin', OS_PASSWORD: ADMIN_PASSWORD, OS_PROJECT_NAME: 'admin' }
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
    await server.close()
    for (const root of roots) rmSync(root, { recursive: true, force: true })
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
  const pcctl = (root: string, ...args: string[]) => cli.run(args, { ...env, PCCTL_HOST_ROOT: root })
  const hostIdOf = (root: string) => readFileSync(join(root, 'etc/pcc/host_id'), 'utf8').trim()
  const showServer = async (id: string) => (await api('GET', `/compute/v2.1/servers/${id}`)).body.server

  it('onboards three hosts with prep-node and makes them hypervisors with authorize-node', async () => {
    for (const name of ['node-a', 'node-b', 'node-c']) {
      const root = stageHostRoot({ hostname: name })
      roots.push(root)
      const prep = await pcctl(root, 'prep-node', '--no-prompt')
      assert.equal(prep.code, 0, prep.stderr)
      const auth = await pcctl(root, 'authorize-node', '--role', 'hypervisor')
      assert.equal(auth.code, 0, auth.stderr)
    }
    const hypervisors = (await api('GET', '/compute/v2.1/os-hypervisors/detail')).body.hypervisors
    assert.deepEqual(hypervisors.map((h: { hypervisor_hostname: string }) => h.hypervisor_hostname).sort(), ['node-a', 'node-b', 'node-c'])
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

    // prep-node again restarts the dead agent (idempotent onboarding); reconciliation removes the stale guest.
    const again = await pcctl(root, 'prep-node', '--no-prompt')
    assert.equal(again.code, 0, again.stderr)
    let last: unknown
    await until('host UP with no servers', 60_000, async () => {
      const hypervisors = (await api('GET', '/compute/v2.1/os-hypervisors/detail')).body.hypervisors as { hypervisor_hostname: string; state: string }[]
      const h = hypervisors.find((x) => x.hypervisor_hostname === victim['OS-EXT-SRV-ATTR:host'])
      const onHost = (await api('GET', `/compute/v2.1/servers/detail?all_tenants=1&host=${victim['OS-EXT-SRV-ATTR:host']}`)).body.servers
      last = { state: h?.state, servers: onHost.map((x: { id: string }) => x.id) }
      return h?.state === 'up' && onHost.length === 0 ? true : undefined
    }).catch((err) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(last)}`)
    })
    assert.equal((await showServer(servers[0])).status, 'ACTIVE')
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
