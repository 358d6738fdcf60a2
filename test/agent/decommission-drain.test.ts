/**
 * `pcctl decommission-node` on a host that runs servers (issue 10, item 2: "decommission drains first"): real
 * agent processes onboarded with `pcctl prep-node` into scratch roots, one control plane. node-a runs an ACTIVE,
 * a PAUSED and a SHUTOFF server. While it is the only hypervisor, decommissioning it is refused and changes
 * nothing. With node-b beside it, a server that no other host may take (anti-affinity with a server on node-b)
 * stops the drain before the roles are touched. With node-c too, the drain moves every server (live for ACTIVE
 * and PAUSED, cold + confirm for SHUTOFF) and keeps its status, then the host is deregistered and its files go.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { moveFor } from '../../src/client/host-drain.js'
import { cliSandbox, type CliRun } from '../../src/testkit/cli.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { agentPid, alive, hostIdOf, stageHostRoot } from '../../src/testkit/host-root.js'
import { adminEnv } from '../../src/testkit/openstack.js'

describe('how a server leaves a drained host (compute action rules)', () => {
  const plan = (status: string, task: string | null = null) => moveFor({ status, 'OS-EXT-STS:task_state': task })
  it('migrates ACTIVE and PAUSED servers live and SHUTOFF ones cold', () => {
    assert.deepEqual([plan('ACTIVE'), plan('PAUSED'), plan('SHUTOFF')], [{ move: 'live migration' }, { move: 'live migration' }, { move: 'cold migration' }])
  })
  it('refuses servers in ERROR, with a task running, or in a state no migration takes, saying what to do', () => {
    assert.match((plan('ERROR') as { why: string }).why, /ERROR.*delete it/)
    assert.match((plan('ACTIVE', 'rebooting') as { why: string }).why, /task_state rebooting/)
    assert.match((plan('VERIFY_RESIZE') as { why: string }).why, /confirm or revert/)
    assert.match((plan('SUSPENDED') as { why: string }).why, /resume it/)
  })
})

describe('decommission-node drains a host that runs servers', () => {
  let server: TestServer
  let env: Record<string, string>
  let api: ComputeClient
  const sandbox = cliSandbox()
  const roots = new Map<string, string>()

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
    env = adminEnv(server)
    const token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, token)
  })
  after(async () => {
    for (const root of roots.values()) {
      if (existsSync(join(root, 'run/pcc-agent.pid'))) {
        try {
          process.kill(agentPid(root), 'SIGKILL')
        } catch {
          // already gone
        }
      }
      rmSync(root, { recursive: true, force: true })
    }
    await server?.close()
  })

  const pcctl = (hostname: string, args: string[]): Promise<CliRun> => sandbox.run(args, { ...env, PCCTL_HOST_ROOT: roots.get(hostname)! })
  const noStack = (r: CliRun) => assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')

  /** prep-node and authorize-node on a fresh scratch root: an agent process that is a hypervisor. */
  async function onboard(hostname: string): Promise<void> {
    roots.set(hostname, stageHostRoot({ hostname }))
    const prep = await pcctl(hostname, ['prep-node', '--no-prompt'])
    assert.equal(prep.code, 0, prep.stderr)
    const auth = await pcctl(hostname, ['authorize-node', '--role', 'hypervisor'])
    assert.equal(auth.code, 0, auth.stderr)
  }

  /** Waits until the server rests (no task) and returns its view. */
  const settled = (id: string) =>
    until(`server ${id} to settle`, 60_000, async () => {
      const s = await api.server(id)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    }, 200)
  /** [name, status, host] of each server. */
  const where = (ids: string[]): Promise<[string, string, string][]> =>
    Promise.all(
      ids.map(async (id) => {
        const s = (await api.server(id))!
        return [s.name as string, s.status as string, s['OS-EXT-SRV-ATTR:host'] as string]
      }),
    )
  const hostView = (id: string) => api.other('GET', `/resmgr/v1/hosts/${id}`)
  const service = async (hostname: string) => ((await api.call('GET', `/os-services?host=${hostname}`)).body.services as Record<string, unknown>[])[0]
  /** The names of the actions each server went through, oldest first. */
  const actionsOf = async (id: string) => (await api.instanceActions(id)).map((a) => a.action as string).reverse()

  const servers: Record<string, string> = {}
  let image: string

  it('onboards node-a as the only hypervisor and runs an ACTIVE, a PAUSED and a SHUTOFF server on it', async () => {
    await onboard('node-a')
    image = await api.bootImage()
    for (const name of ['running', 'paused', 'stopped']) servers[name] = (await api.create({ name, imageRef: image, flavorRef: '42', networks: 'none' })).id
    for (const id of Object.values(servers)) assert.equal((await settled(id)).status, 'ACTIVE')
    assert.equal((await api.action(servers.paused, 'pause')).status, 202)
    assert.equal((await api.action(servers.stopped, 'os-stop')).status, 202)
    await settled(servers.paused)
    await settled(servers.stopped)
    assert.deepEqual(await where(Object.values(servers)), [['running', 'ACTIVE', 'node-a'], ['paused', 'PAUSED', 'node-a'], ['stopped', 'SHUTOFF', 'node-a']])
  })

  it('refuses while no other hypervisor can take the servers, names them, exits 1 and changes nothing', async () => {
    const before = await where(Object.values(servers))
    const actions = await Promise.all(Object.values(servers).map(actionsOf))
    const pid = agentPid(roots.get('node-a')!)
    const r = await pcctl('node-a', ['decommission-node'])
    assert.equal(r.code, 1, r.stderr)
    noStack(r)
    assert.match(r.stderr, /Error: cannot decommission node-a: 3 servers cannot be moved off node-a:/)
    for (const [name, id] of Object.entries(servers)) assert.match(r.stderr, new RegExp(`  ${name} \\(${id}\\): no other hypervisor .* can take it`))
    assert.match(r.stderr, /the host keeps its registration and roles/)
    assert.match(r.stderr, /then run `pcctl decommission-node` again/)

    const view = await hostView(hostIdOf(roots.get('node-a')!))
    assert.equal(view.status, 200)
    assert.deepEqual([view.body.roles, view.body.role_status], [['hypervisor'], 'ok'])
    const svc = await service('node-a')
    assert.deepEqual([svc.status, svc.disabled_reason], ['enabled', null], 'the compute service was never disabled')
    assert.deepEqual(await where(Object.values(servers)), before)
    assert.deepEqual(await Promise.all(Object.values(servers).map(actionsOf)), actions, 'no migration was even asked for')
    assert.ok(alive(pid), 'the agent still runs')
    assert.ok(existsSync(join(roots.get('node-a')!, 'etc/pcc/agent.json')), 'the host keeps its files')
  })

  it('stops at a server that no other host may take, before touching the roles, and re-enables the host', async () => {
    await onboard('node-b')
    // An anti-affinity group with a member on each host: the one on node-a can go nowhere while node-b is the only other host.
    const group = (await api.call('POST', '/os-server-groups', { server_group: { name: 'apart', policy: 'anti-affinity' } })).body.server_group.id as string
    servers.guard = (await api.create({ name: 'guard', imageRef: image, flavorRef: '42', networks: 'none', availability_zone: 'nova:node-b' }, { group })).id
    servers.pinned = (await api.create({ name: 'pinned', imageRef: image, flavorRef: '42', networks: 'none', availability_zone: 'nova:node-a' }, { group })).id
    assert.deepEqual((await Promise.all([settled(servers.guard), settled(servers.pinned)])).map((s) => s['OS-EXT-SRV-ATTR:host']), ['node-b', 'node-a'])

    const r = await pcctl('node-a', ['decommission-node', '-t', '2m'])
    assert.equal(r.code, 1, r.stderr)
    noStack(r)
    assert.match(r.stderr, /✓ compute service of node-a disabled/)
    assert.match(r.stderr, new RegExp(`  pinned \\(${servers.pinned}\\): No valid host was found`))
    assert.match(r.stderr, /its compute service is enabled again/)
    assert.doesNotMatch(r.stderr, /removing role/, 'the roles are not touched')

    const view = await hostView(hostIdOf(roots.get('node-a')!))
    assert.deepEqual([view.status, view.body.roles, view.body.role_status], [200, ['hypervisor'], 'ok'])
    assert.deepEqual([(await service('node-a')).status, (await service('node-a')).disabled_reason], ['enabled', null])
    const pinned = await api.server(servers.pinned)
    assert.deepEqual([pinned?.status, pinned?.['OS-EXT-SRV-ATTR:host']], ['ACTIVE', 'node-a'])
    // Servers moved before the drain stopped stay where they went; none is lost and each keeps its status.
    const now = await where(Object.values(servers))
    assert.deepEqual(Object.fromEntries(now.map(([name, status]) => [name, status])), { running: 'ACTIVE', paused: 'PAUSED', stopped: 'SHUTOFF', guard: 'ACTIVE', pinned: 'ACTIVE' })
    for (const [name, , host] of now) assert.ok(['node-a', 'node-b'].includes(host), `${name} on ${host}`)
  })

  it('with room on node-c, moves every server off node-a as it was, then deregisters the host and removes its files', async () => {
    await onboard('node-c')
    const root = roots.get('node-a')!
    const id = hostIdOf(root)
    const pid = agentPid(root)
    // What the compute service says while the drain runs: disabled, naming the decommission.
    let reason: unknown
    let done = false
    const watch = (async () => {
      while (!done && reason === undefined) {
        const svc = await service('node-a')
        if (svc?.status === 'disabled') reason = svc.disabled_reason
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    const r = await pcctl('node-a', ['decommission-node', '-t', '3m'])
    done = true
    await watch
    assert.equal(r.code, 0, r.stderr)
    assert.match(String(reason), /decommission-node/, 'the service was disabled with a reason naming the decommission')
    assert.match(r.stderr, /✓ compute service of node-a disabled/)
    assert.match(r.stderr, /✓ node-a runs no servers/)
    assert.ok(r.stderr.indexOf('✓ node-a runs no servers') < r.stderr.indexOf('removing role hypervisor'), 'the roles go after the servers')
    assert.match(r.stdout, new RegExp(`Host ${id} is decommissioned\\.`))

    const after = await where(Object.values(servers))
    assert.deepEqual(Object.fromEntries(after.map(([name, status]) => [name, status])), { running: 'ACTIVE', paused: 'PAUSED', stopped: 'SHUTOFF', guard: 'ACTIVE', pinned: 'ACTIVE' })
    for (const [name, , host] of after) assert.ok(['node-b', 'node-c'].includes(host), `${name} left node-a (on ${host})`)
    assert.equal(after.find(([name]) => name === 'pinned')?.[2], 'node-c', 'anti-affinity held: pinned went to the host without guard')
    // Running and paused servers moved live; the stopped one cold, confirmed by the drain. Nothing was deleted.
    for (const name of ['running', 'paused']) assert.ok((await actionsOf(servers[name])).includes('live-migration'), `${name} was live-migrated`)
    assert.deepEqual((await actionsOf(servers.stopped)).slice(-2), ['migrate', 'confirmResize'])
    assert.equal((await api.servers('all_tenants=1')).length, Object.keys(servers).length, 'no server was deleted')

    assert.equal((await hostView(id)).status, 404)
    assert.equal(await service('node-a'), undefined)
    assert.equal(alive(pid), false, 'the agent is stopped')
    for (const path of ['opt/pcc', 'etc/pcc', 'var/log/pcc', 'run/pcc-agent.pid']) assert.equal(existsSync(join(root, path)), false, `${path} removed`)
    // The remaining hosts are in service and run the guests now.
    for (const hostname of ['node-b', 'node-c']) assert.equal((await service(hostname)).status, 'enabled')
  })
})
