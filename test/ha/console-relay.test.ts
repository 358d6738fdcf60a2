/**
 * Remote consoles across processes: two real pcc-server processes on one PostgreSQL, a real agent whose
 * controller is process A only. A user's websocket on B (as a load balancer may send it) makes B the session's
 * owner; the agent's websocket reaches A, which finds the session in the store and relays it to B's advertised
 * URL with the session's secret. The same session with the user on A needs no relay. Typed commands are answered
 * both ways, a relay to a session the process does not hold is refused, and no session row is left.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { randomUUID } from 'node:crypto'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { killAgent, onboardAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { ComputeClient, login, until } from '../../src/testkit/compute-api.js'
import { openConsoleClient, tempestUpgrade } from '../../src/testkit/console-client.js'

describe('a console whose user and agent reach different processes', () => {
  let cluster: Cluster
  let store: Store
  let host: ScratchHost | undefined
  let agent: ChildProcess | undefined
  let viaA: ComputeClient
  let serverId: string

  before(async () => {
    cluster = await startCluster({ size: 2, env: { PCC_SIMULATED_HOSTS: '0', PCC_RECONCILE_SECONDS: '0', PCC_HOST_DOWN_AFTER_SECONDS: '30', PCC_LOG_LEVEL: 'info' } })
    store = await openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
    const [a, b] = cluster.nodes
    viaA = new ComputeClient(a.url, (await login(a.url, cluster.adminPassword)).token)
    ;({ host, agent } = await onboardAgent(viaA, 'relayed', a.url))
    // B learns of hosts another process registered by its 2-second driver sync (docs/agent.md).
    const viaB = new ComputeClient(b.url, viaA.token)
    serverId = (await viaB.create({ name: 'far', imageRef: await viaB.bootImage(), flavorRef: '1', networks: 'none' })).id
    await until('the server ACTIVE', 60_000, async () => ((await viaB.server(serverId))?.status === 'ACTIVE' ? true : undefined), 200)
  })
  after(async () => {
    if (agent) await killAgent(agent)
    await store?.close()
    await cluster?.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  /** A serial console URL, pointed at one process (a load balancer's choice). */
  const urlOn = async (node: number) => {
    const r = await viaA.call('POST', `/servers/${serverId}/remote-consoles`, { remote_console: { protocol: 'serial', type: 'serial' } })
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const url = new URL(r.body.remote_console.url as string)
    url.host = new URL(cluster.nodes[node].url).host
    return url.toString()
  }

  const relays = () => (readFileSync(cluster.nodes[0].logFile, 'utf8').match(/console session relayed to the process that owns it/g) ?? []).length

  for (const [node, how, relayed] of [
    [1, 'relayed from A to B', 1],
    [0, 'joined on A itself', 0],
  ] as const) {
    it(`user on ${node === 1 ? 'B' : 'A'}, agent on A: the session is ${how}`, async () => {
      const before = relays()
      const client = await openConsoleClient(await urlOn(node), { protocols: ['binary'] })
      try {
        await client.until(/far login: $/, 30_000)
        client.send('root\r')
        await client.until(/root@far:~# $/)
        client.send('cat /var/lib/cloud/data/instance-id\r')
        await client.until(new RegExp(`instance-id\\r\\n${serverId}\\r\\nroot@far:~# $`))
      } finally {
        await client.close()
      }
      await until('the session row gone', 10_000, async () => ((await store.db.selectFrom('console_sessions').select('id').execute()).length === 0 ? true : undefined))
      assert.equal(relays() - before, relayed, 'relays by A')
    })
  }

  // Only an unknown session here; a live session refusing a missing or wrong secret: test/compute/console-proxy.test.ts.
  it('refuses a relay to a session it does not hold', async () => {
    const id = randomUUID()
    const refused = await tempestUpgrade(`${cluster.nodes[1].url}/x?path=console/relay/${id}`)
    assert.match(refused.statusLine, /^HTTP\/1\.1 404 /)
    assert.equal(refused.after.length, 0)
  })
})
