/**
 * Issue 10: an agent reconnects with backoff when the network drops (not only when the control plane restarts)
 * and resumes without duplicating or losing work. The agent (a real process) reaches the control plane through
 * a TCP relay (testkit/tcp-relay.ts); the relay is cut while builds are in flight on the agent, more servers are
 * created while it is cut, then it is restored. The relay records every request the agent tries meanwhile.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, login, until } from '../../src/testkit/compute-api.js'
import { TcpRelay, type RelayRequest } from '../../src/testkit/tcp-relay.js'
import type { GuestInfo } from '../../src/contracts/host/compute-driver.js'

/** Long enough for several rounds of the agent's backoff (0.5 s doubling, jittered to 50–100 %). */
const OUTAGE_MS = 10_000

/** The gaps between the tries of one kind of request that the cut relay refused. */
function refusedGaps(requests: RelayRequest[], path: string): number[] {
  const times = requests.filter((r) => !r.forwarded && r.line.includes(path)).map((r) => r.at)
  return times.slice(1).map((t, i) => t - times[i])
}

/** Backoff, not a fixed retry: the gaps never shrink (up to timer noise) and at least double over two rounds. */
function assertBackoff(gaps: number[], what: string): void {
  assert.ok(gaps.length >= 3, `${what}: ${gaps.length + 1} attempts while cut (gaps ${gaps.join(', ')} ms)`)
  for (let i = 1; i < gaps.length; i++) assert.ok(gaps[i] >= gaps[i - 1] - 150, `${what}: gap ${gaps[i]} ms after ${gaps[i - 1]} ms (gaps ${gaps.join(', ')})`)
  assert.ok(gaps[gaps.length - 1] >= 2 * gaps[0], `${what}: gaps ${gaps.join(', ')} ms do not grow`)
  assert.ok(gaps[0] >= 200, `${what}: retried after ${gaps[0]} ms`)
}

describe('an agent whose network drops reconnects with backoff and resumes its work', () => {
  let server: TestServer
  let relay: TcpRelay
  let api: ComputeClient
  let host: ScratchHost
  let agent: ChildProcess | undefined
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '60', PCC_RECONCILE_SECONDS: '0' } })
    relay = new TcpRelay({ host: '127.0.0.1', port: Number(new URL(server.url).port) })
    await relay.open()
    const session = await login(server.url, ADMIN_PASSWORD)
    api = new ComputeClient(server.url, session.token)
    await api.unlimitedQuotas(session.projectId)
  })
  after(async () => {
    if (agent) await killAgent(agent)
    await relay?.close()
    await server?.close()
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  const db = () => server.deps.store.db
  const agentState = () =>
    JSON.parse(readFileSync(join(host.root, 'var/lib/pcc/agent-state.json'), 'utf8')) as { guests: GuestInfo[]; done: Record<string, { posted: boolean }> }

  it('cut while builds run on the agent and while more are asked: every server ends ACTIVE, each guest booted once', async () => {
    const token = await api.other('POST', '/resmgr/v1/registration-tokens', { note: 'network drop' })
    assert.equal(token.status, 201, JSON.stringify(token.body))
    // The agent knows the control plane only as the relay's address.
    host = scratchHost({ hostname: 'drop-host', controller: relay.url, registrationToken: token.body.token, delayMs: 100, vcpus: 64, memoryMb: 64000 })
    agent = spawnAgent(host.root)
    await until('the host registered', 20_000, async () => ((await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200 ? true : undefined))
    assert.equal((await api.other('PUT', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`, {})).status, 200)
    await until('the hypervisor role applied', 20_000, async () => ((await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.role_status === 'ok' ? true : undefined))

    const image = await api.bootImage()
    const create = async (name: string) => (await api.create({ name, imageRef: image, flavorRef: '1', networks: 'none' })).id
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push(await create(`before-${i}`))
    // Cut once the agent has taken work it has not answered yet.
    await until('commands in flight on the agent', 30_000, async () => {
      const inFlight = await db().selectFrom('host_commands').select('id').where('host_id', '=', host.hostId).where('status', '=', 'delivered').execute()
      return inFlight.length > 0 ? true : undefined
    }, 20)
    relay.cut()
    const cutAt = Date.now()
    // Users keep working meanwhile: these builds wait for the agent.
    for (let i = 0; i < 3; i++) ids.push(await create(`during-${i}`))
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS - (Date.now() - cutAt)))
    const servers = await Promise.all(ids.map((id) => api.server(id)))
    assert.ok(servers.some((s) => s!.status === 'BUILD'), 'builds wait for the agent while it is cut off')
    relay.restore()
    const restoredAt = Date.now()

    // It kept trying while cut off, with growing gaps, for its command long-poll and its heartbeat.
    assertBackoff(refusedGaps(relay.requests, '/commands?wait='), 'command poll')
    assertBackoff(refusedGaps(relay.requests, '/heartbeat'), 'heartbeat')

    // It reconnects on its own: the next poll goes through, and asks for commands delivered before the drop again.
    const firstPoll = await until('a poll through the restored network', 40_000, async () => relay.requests.find((a) => a.forwarded && a.at >= restoredAt && a.line.includes('/commands?wait=')), 100)
    assert.match(firstPoll.line, /redeliver=true/, 'after a failed poll the agent asks for undelivered work again')
    await until('a heartbeat through the restored network', 40_000, async () => (relay.requests.some((a) => a.forwarded && a.at >= restoredAt && a.line.includes('/heartbeat')) ? true : undefined), 100)

    // Nothing lost: every server ACTIVE on the agent's host.
    const finals = await until('every server ACTIVE', 90_000, async () => {
      const all = await Promise.all(ids.map((id) => api.server(id)))
      return all.every((s) => s!['OS-EXT-STS:task_state'] === null && s!.status !== 'BUILD') ? all : undefined
    }, 250)
    for (const s of finals) {
      assert.equal(s!.status, 'ACTIVE', `${s!.name}: ${JSON.stringify(s!.fault)}`)
      assert.equal(s!['OS-EXT-SRV-ATTR:host'], 'drop-host')
    }
    // Nothing done twice: one guest per server on the host, each booted once; one spawn command per server.
    const state = await until('every outcome posted', 20_000, async () => {
      const s = agentState()
      return s.guests.length === ids.length && Object.values(s.done).every((d) => d.posted) ? s : undefined
    }, 100)
    assert.deepEqual(state.guests.map((g) => g.serverId).sort(), [...ids].sort())
    assert.deepEqual(state.guests.filter((g) => g.boots !== 1).map((g) => `${g.serverId}: ${g.boots} boots`), [])
    const spawns = await db().selectFrom('host_commands').select(['dedupe_key', 'status']).where('host_id', '=', host.hostId).where('op', '=', 'spawn').execute()
    for (const id of ids) assert.equal(spawns.filter((c) => c.dedupe_key.startsWith(`spawn:${id}:`)).length, 1, `one spawn command for ${id}`)
    const open = await db().selectFrom('host_commands').select(['op', 'status']).where('host_id', '=', host.hostId).where('status', 'in', ['queued', 'delivered']).execute()
    assert.deepEqual(open, [], 'no command left unanswered')
  })
})
