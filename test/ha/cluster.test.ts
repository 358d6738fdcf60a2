/**
 * The high-availability deployment, for real: three `pcc-server` processes on one PostgreSQL, a workload sent
 * round-robin to all of them, and a process killed with SIGKILL in the middle of 300 creates.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { startCluster, type Cluster, type ClusterNode } from '../../src/testkit/cluster.js'
import { bootImage, call, compute, createBody, issueToken, liftQuotas, serverStatuses, smallestFlavor, validateToken } from './helpers.js'

const TERMINAL = new Set(['ACTIVE', 'ERROR'])

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, cluster?: Cluster): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) assert.fail(`${what}: not after ${timeoutMs} ms${cluster ? `\n${cluster.describe(15)}` : ''}`)
    await sleep(100)
  }
}

/** Task owners are `host:pid:random`: the pid tells which process holds a task. */
function ownerPid(owner: string | null): number | undefined {
  const pid = owner?.split(':')[1]
  return pid ? Number(pid) : undefined
}

async function openDb(cluster: Cluster): Promise<Store> {
  return openStore({ dataDir: tmpdir(), databaseUrl: cluster.databaseUrl, poolSize: 2 })
}

test('three processes, round-robin: tokens validate everywhere, revocations reach every process within 1 s, creates go ACTIVE through the other conductors, lists agree', async () => {
  const cluster = await startCluster({
    size: 3,
    env: { PCC_SIMULATED_HOSTS: '3', PCC_SIMULATED_DELAY_MS: '50', PCC_TASK_LEASE_SECONDS: '5' },
  })
  const store = await openDb(cluster)
  const db = store.db
  const [a, b, c] = cluster.nodes
  let watching = true
  let watcher: Promise<void> = Promise.resolve()
  try {
    // A token issued by A validates on B and C (and on A).
    const { token: adminToken, projectId } = await issueToken(a, cluster.adminPassword)
    for (const node of cluster.nodes) {
      const r = await validateToken(node, adminToken, adminToken)
      assert.equal(r.status, 200, `validation on node ${node.index}: ${JSON.stringify(r.body)}`)
      assert.equal(r.body.token.user.name, 'admin')
      assert.equal(r.body.token.project.id, projectId)
    }

    // A token issued by B, revoked on C: refused by A and B within a second.
    const { token: doomed } = await issueToken(b, cluster.adminPassword)
    for (const node of cluster.nodes) assert.equal((await validateToken(node, adminToken, doomed)).status, 200)
    assert.equal((await call(compute(a), 'GET', '/servers', { token: doomed })).status, 200)
    const revoke = await call(c.url, 'DELETE', '/identity/v3/auth/tokens', { token: adminToken, headers: { 'x-subject-token': doomed } })
    assert.equal(revoke.status, 204, JSON.stringify(revoke.body))
    const revokedAt = Date.now()
    for (const node of [a, b]) {
      await waitFor(`revocation seen by node ${node.index}`, 1000 - (Date.now() - revokedAt), async () => ((await validateToken(node, adminToken, doomed)).status === 404 ? true : undefined))
    }
    assert.ok(Date.now() - revokedAt <= 1000, `revocation took ${Date.now() - revokedAt} ms to reach every process`)
    for (const node of cluster.nodes) {
      assert.equal((await call(compute(node), 'GET', '/servers', { token: doomed })).status, 401, `node ${node.index} still accepts the revoked token`)
    }

    // Creates sent to A only, while we watch which processes hold their build tasks.
    const flavor = await smallestFlavor(b, adminToken)
    const image = await bootImage(cluster, adminToken)
    await liftQuotas(c, adminToken, projectId)
    const holders = new Set<number>()
    watcher = (async () => {
      while (watching) {
        const rows = await db.selectFrom('tasks').select('lease_owner').where('status', '=', 'running').execute()
        for (const row of rows) {
          const pid = ownerPid(row.lease_owner)
          if (pid !== undefined) holders.add(pid)
        }
        await sleep(10)
      }
    })()
    const ids: string[] = []
    for (let i = 0; i < 24; i++) {
      const r = await call(compute(a), 'POST', '/servers', { token: adminToken, body: createBody(`ha-a-${i}`, flavor, image) })
      assert.equal(r.status, 202, JSON.stringify(r.body))
      ids.push(r.body.server.id)
    }
    // And more round-robin, every node answering.
    for (let i = 0; i < 12; i++) {
      const node = cluster.nodes[i % 3]
      const r = await call(compute(node), 'POST', '/servers', { token: adminToken, body: createBody(`ha-rr-${i}`, flavor, image) })
      assert.equal(r.status, 202, `create on node ${node.index}: ${JSON.stringify(r.body)}`)
      ids.push(r.body.server.id)
    }
    let poll = 0
    await waitFor(
      'every server ACTIVE',
      60_000,
      async () => {
        const statuses = await serverStatuses(cluster.nodes[poll++ % 3], adminToken)
        return ids.every((id) => statuses.get(id) === 'ACTIVE') ? true : undefined
      },
      cluster,
    )
    watching = false
    await watcher
    const others = [b, c].map((n) => n.process!.pid!)
    assert.ok(others.some((pid) => holders.has(pid)), `no build task ran on B or C (task holders seen: ${[...holders].join(', ')}; A is ${a.process!.pid})`)

    // Every list and show agrees whichever process answers.
    const views = await Promise.all(cluster.nodes.map((node) => serverStatuses(node, adminToken)))
    for (const view of views) assert.deepEqual([...view.entries()].sort(), [...views[0].entries()].sort())
    assert.equal(views[0].size, ids.length)
    for (const id of ids.slice(0, 6)) {
      const shown = await Promise.all(cluster.nodes.map((node) => call(compute(node), 'GET', `/servers/${id}`, { token: adminToken })))
      for (const s of shown) {
        assert.equal(s.status, 200)
        assert.equal(s.body.server.status, 'ACTIVE')
        assert.equal(s.body.server.hostId, shown[0].body.server.hostId)
        assert.equal(s.body.server.updated, shown[0].body.server.updated)
      }
    }
    const flavorLists = await Promise.all(cluster.nodes.map((node) => call(compute(node), 'GET', '/flavors', { token: adminToken })))
    for (const f of flavorLists) assert.deepEqual(f.body, flavorLists[0].body)
    // The hypervisors: every process registered the same simulated hosts, once.
    const hosts = await db.selectFrom('hosts').select('hostname').execute()
    assert.deepEqual(hosts.map((h) => h.hostname).sort(), ['sim-host-1', 'sim-host-2', 'sim-host-3'])

    // A delete on C is seen by A and B.
    const gone = ids[0]
    assert.equal((await call(compute(c), 'DELETE', `/servers/${gone}`, { token: adminToken })).status, 204)
    await waitFor('the deleted server vanishes from every list', 20_000, async () => {
      const lists = await Promise.all(cluster.nodes.map((node) => serverStatuses(node, adminToken)))
      return lists.every((l) => !l.has(gone)) ? true : undefined
    })
    for (const node of cluster.nodes) assert.equal((await call(compute(node), 'GET', `/servers/${gone}`, { token: adminToken })).status, 404)
  } finally {
    watching = false
    await watcher.catch(() => {})
    await store.close()
    await cluster.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
  }
})

test('SIGKILL of one process in the middle of 300 creates: every server ends ACTIVE or ERROR and the survivors finish its tasks', async () => {
  const cluster = await startCluster({
    size: 3,
    env: { PCC_SIMULATED_HOSTS: '3', PCC_SIMULATED_DELAY_MS: '100', PCC_TASK_LEASE_SECONDS: '2', PCC_TASK_WORKERS: '8' },
  })
  const store = await openDb(cluster)
  const db = store.db
  const victim = cluster.nodes[1]
  const victimPid = victim.process!.pid!
  try {
    const { token, projectId } = await issueToken(cluster.nodes[0], cluster.adminPassword)
    const flavor = await smallestFlavor(cluster.nodes[0], token)
    const image = await bootImage(cluster, token)
    await liftQuotas(cluster.nodes[0], token, projectId)

    const total = 300
    let next = 0
    let accepted = 0
    let lostInFlight = 0
    let orphaned: string[] = []
    const alive = (): ClusterNode[] => cluster.nodes.filter((n) => n.alive)
    // 12 clients in parallel, round-robin over the processes still alive (what a load balancer does).
    const client = async () => {
      for (;;) {
        const i = next++
        if (i >= total) return
        const node = cluster.nodes[i % 3].alive ? cluster.nodes[i % 3] : alive()[i % alive().length]
        try {
          const r = await call(compute(node), 'POST', '/servers', { token, body: createBody(`crash-${i}`, flavor, image) })
          assert.equal(r.status, 202, `create ${i} on node ${node.index}: ${JSON.stringify(r.body)}`)
          accepted++
        } catch (err) {
          if (node !== victim) throw err
          lostInFlight++ // The connection died with the process; the create may or may not have committed.
        }
      }
    }
    const killer = (async () => {
      // Kill the victim once it holds build tasks and about a third of the creates are in.
      await waitFor('the victim holding tasks', 60_000, async () => {
        if (next < total / 3) return undefined
        const held = await db.selectFrom('tasks').select('id').where('status', '=', 'running').where('lease_owner', 'like', `%:${victimPid}:%`).execute()
        return held.length > 0 ? true : undefined
      })
      await cluster.kill(1)
      // What it held when it died: the survivors must finish these.
      orphaned = (
        await db.selectFrom('tasks').select('id').where('status', '=', 'running').where('lease_owner', 'like', `%:${victimPid}:%`).execute()
      ).map((r) => r.id)
    })()
    await Promise.all([...Array.from({ length: 12 }, client), killer])
    assert.ok(!victim.alive)
    assert.ok(orphaned.length > 0, 'the victim held no task when it was killed')

    // Everything settles: no task queued or running, no server in BUILD.
    const settled = await waitFor(
      'every task finished and every server ACTIVE or ERROR',
      120_000,
      async () => {
        const open = await db.selectFrom('tasks').select('id').where('status', 'in', ['queued', 'running']).execute()
        if (open.length > 0) return undefined
        const statuses = await serverStatuses(cluster.nodes[0], token)
        return [...statuses.values()].every((s) => TERMINAL.has(s)) ? statuses : undefined
      },
      cluster,
    )
    assert.ok(settled.size >= accepted && settled.size <= accepted + lostInFlight, `${settled.size} servers for ${accepted} accepted creates (+${lostInFlight} cut off)`)
    const counts = { ACTIVE: 0, ERROR: 0 }
    for (const s of settled.values()) counts[s as 'ACTIVE' | 'ERROR']++
    // The simulated hosts do not fail on their own here: a dead process must not turn creates into errors.
    assert.equal(counts.ERROR, 0, `servers in ERROR: ${counts.ERROR}`)
    const orphanRows = await db.selectFrom('tasks').select(['id', 'status', 'lease_owner', 'last_error']).where('id', 'in', orphaned).execute()
    for (const row of orphanRows) {
      assert.equal(row.status, 'done', `orphaned task ${row.id} ended ${row.status}: ${row.last_error}`)
    }
    const survivorsView = await serverStatuses(cluster.nodes[2], token)
    assert.deepEqual([...survivorsView.entries()].sort(), [...settled.entries()].sort())
  } finally {
    await store.close()
    await cluster.close({ keepLogs: !!process.env.PCC_TEST_KEEP_LOGS })
  }
})
