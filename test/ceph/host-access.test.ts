/**
 * Hosts learn Ceph from the control plane (docs/ceph.md, "cephx users and caps"): a real pcc-agent process, given
 * nothing but its registration token, ends up with the cluster's ceph.conf and a cephx user of its own
 * (`client.pcc-host-<id>`, key 0600 under its state dir), sealed at rest in the store; with it the host can make RBD
 * images in the vms and volumes pools and only read the images pool. Another host's credential gets nothing, and
 * removing the host removes its cephx user.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { freshPccPools, testCeph, type CephCluster } from '../../src/testkit/ceph.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, onboardAgent } from '../../src/testkit/agent.js'
import type { ChildProcess } from 'node:child_process'

const exec = promisify(execFile)

describe('hosts learn Ceph from the control plane', () => {
  let ceph: CephCluster | string
  let pools: Awaited<ReturnType<typeof freshPccPools>> | undefined
  let server: TestServer | undefined
  const agents: { root: string; agent: ChildProcess }[] = []

  before(async () => {
    ceph = await testCeph()
    if (typeof ceph === 'string') return
    pools = await freshPccPools(ceph)
    server = await startTestServer({
      publicUrlFromListen: true,
      env: pools.env,
    })
  })
  after(async () => {
    for (const a of agents) {
      await killAgent(a.agent)
      rmSync(a.root, { recursive: true, force: true })
    }
    await server?.close()
    await pools?.remove()
  })

  it("a new host gets its own cephx user with rbd rights on vms and volumes only; a removed host's user goes", async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    const admin = (await server!.deps.tokens.issue({ userId: server!.bootstrap.adminUserId, methods: ['password'], scope: { p: server!.bootstrap.adminProjectId } })).token
    const api = {
      other: async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${server!.url}${path}`, { method, headers: { 'x-auth-token': admin, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) })
        const text = await res.text()
        return { status: res.status, body: text ? JSON.parse(text) : {} }
      },
    }
    const { host, agent } = await onboardAgent(api, 'ceph-client-1', server!.url)
    agents.push({ root: host.root, agent })
    const conf = join(host.root, 'var/lib/pcc/ceph/ceph.conf')
    const keyring = join(host.root, 'var/lib/pcc/ceph/keyring')
    for (let i = 0; i < 100 && !statSync(conf, { throwIfNoEntry: false }); i++) await sleep(100)
    assert.equal(statSync(keyring).mode & 0o777, 0o600)
    assert.equal(statSync(conf).mode & 0o777, 0o600)
    const user = `pcc-host-${host.hostId}`
    assert.match(readFileSync(conf, 'utf8'), new RegExp(`\\[client\\.${user}\\]\\nkeyring = ${keyring}`))

    // The key is sealed in the store, never in plain text.
    const row = await server!.deps.store.db.selectFrom('host_ceph_users').selectAll().where('host_id', '=', host.hostId).executeTakeFirstOrThrow()
    const key = /key = (\S+)/.exec(readFileSync(keyring, 'utf8'))![1]
    assert.equal(row.ceph_user, user)
    assert.ok(!row.key_sealed.includes(key))

    // Its rights, tried with Ceph's own tool as the host.
    const rbd = (...args: string[]) => exec('rbd', ['-c', conf, '--id', user, ...args])
    const { images: imagesPool, volumes: volumesPool, vms: vmsPool } = pools!
    await rbd('create', '--size', '1M', `${vmsPool}/probe_disk`)
    await rbd('create', '--size', '1M', `${volumesPool}/volume-probe`)
    await assert.rejects(rbd('create', '--size', '1M', `${imagesPool}/not-allowed`), /Operation not permitted|Permission denied/)
    await rbd('ls', imagesPool)

    // Another host's credential gets no access of this host's; a user token none at all.
    const other = await fetch(`${server!.url}/resmgr/v1/hosts/${host.hostId}/ceph`, { headers: { 'x-auth-token': admin } })
    assert.equal(other.status, 401)

    // The host goes: so does its cephx user (its key opens nothing any more).
    await killAgent(agent)
    const removed = await api.other('DELETE', `/resmgr/v1/hosts/${host.hostId}?force=true`)
    assert.equal(removed.status, 200, JSON.stringify(removed.body))
    await assert.rejects(rbd('ls', vmsPool), /couldn't connect|Permission denied|Operation not permitted|authenticate/)
    assert.equal(await server!.deps.store.db.selectFrom('host_ceph_users').select('host_id').where('host_id', '=', host.hostId).executeTakeFirst(), undefined)
  })
})
