/**
 * IPAM under real concurrency: two pcc-server processes on one PostgreSQL database (this process and a child
 * process started from the built server), hammered at once with port creates on one small subnet. Every
 * address is handed out exactly once and the requests beyond the pool get Neutron's IpAddressGenerationFailure.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { freePort, startTestServer, ADMIN_PASSWORD, type TestServer } from '../../src/testkit/harness.js'
import { client, projectMember, type Caller, type Json } from './helpers.js'

const MAIN = fileURLToPath(new URL('../../src/server/main.js', import.meta.url))

async function waitReady(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`second server exited (${child.exitCode}): ${stderr()}`)
    try {
      if ((await fetch(`${url}/readyz`)).ok) return
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`second server did not become ready: ${stderr()}`)
}

describe('IPAM across two server processes on one PostgreSQL', () => {
  let first: TestServer
  let second: ChildProcess
  let secondUrl: string
  let racer: Caller
  let fresh: Caller

  before(async () => {
    first = await startTestServer({ dialect: 'postgres' })
    // Users first: the second process then starts with them in its identity snapshot.
    racer = await projectMember(first, 'racer')
    fresh = await projectMember(first, 'fresh')
    const port = await freePort()
    secondUrl = `http://127.0.0.1:${port}`
    let err = ''
    second = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...(process.env.LD_LIBRARY_PATH ? { LD_LIBRARY_PATH: process.env.LD_LIBRARY_PATH } : {}),
        PCC_LISTEN: `127.0.0.1:${port}`,
        PCC_PUBLIC_URL: secondUrl,
        PCC_DATA_DIR: first.dataDir,
        PCC_DATABASE_URL: first.config.databaseUrl,
        PCC_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PCC_SIMULATED_HOSTS: '0',
        PCC_LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    second.stderr!.on('data', (d: Buffer) => (err += d.toString()))
    await waitReady(secondUrl, second, () => err)
  })

  after(async () => {
    if (second.exitCode === null) {
      second.kill('SIGTERM')
      await new Promise((r) => second.once('exit', r))
    }
    await first.close()
  })

  it('hands out every address of a /28 once, then IpAddressGenerationFailure', async () => {
    const caller = racer
    const viaFirst = client(first, caller)
    const viaSecond = client({ ...first, url: secondUrl } as TestServer, caller)
    const net = await viaFirst.create('networks', 'network', { name: 'race' })
    const subnet = await viaFirst.create('subnets', 'subnet', { network_id: net.id, ip_version: 4, cidr: '10.20.30.0/28' })
    const poolSize = 13 // .2 … .14: the gateway is .1, .0 and .15 are the network and broadcast addresses
    const extra = 5
    const attempts = Array.from({ length: poolSize + extra }, (_, i) => (i % 2 === 0 ? viaFirst : viaSecond).post<Json>('/v2.0/ports', { port: { network_id: net.id, name: `p${i}` } }))
    const replies = await Promise.all(attempts)
    const created = replies.filter((r) => r.status === 201)
    const refused = replies.filter((r) => r.status !== 201)
    assert.equal(created.length, poolSize, JSON.stringify(refused.map((r) => r.body)))
    for (const r of refused) {
      assert.equal(r.status, 409, JSON.stringify(r.body))
      assert.equal(r.body.NeutronError.type, 'IpAddressGenerationFailure')
    }
    const addresses = created.map((r) => r.body.port.fixed_ips[0].ip_address as string)
    assert.equal(new Set(addresses).size, poolSize, 'no address twice')
    const expected = Array.from({ length: poolSize }, (_, i) => `10.20.30.${i + 2}`)
    assert.deepEqual([...addresses].sort(), [...expected].sort())
    for (const r of created) assert.equal(r.body.port.fixed_ips[0].subnet_id, subnet.id)
    // Both processes served some of the successful creates.
    assert.ok(created.some((_, i) => replies.indexOf(created[i]) % 2 === 0))
    // The database agrees: one allocation row per port, all distinct.
    const rows = await first.deps.store.db.selectFrom('ip_allocations').select('ip_address').where('subnet_id', '=', subnet.id).execute()
    assert.equal(rows.length, poolSize)
    // A freed address goes back to the pool and is taken again exactly once, even when both race for it.
    const victim = created[0].body.port
    assert.equal((await viaSecond.del(`/v2.0/ports/${victim.id}`)).status, 204)
    const again = await Promise.all([viaFirst, viaSecond, viaFirst, viaSecond].map((c) => c.post<Json>('/v2.0/ports', { port: { network_id: net.id } })))
    const winners = again.filter((r) => r.status === 201)
    assert.equal(winners.length, 1)
    assert.equal(winners[0].body.port.fixed_ips[0].ip_address, victim.fixed_ips[0].ip_address)
  })

  it('creates one default security group when both processes use it first at once', async () => {
    const caller = fresh
    const viaFirst = client(first, caller)
    const viaSecond = client({ ...first, url: secondUrl } as TestServer, caller)
    const lists = await Promise.all([viaFirst, viaSecond, viaFirst, viaSecond].map((c) => c.get<Json>('/v2.0/security-groups')))
    for (const l of lists) assert.equal(l.status, 200, JSON.stringify(l.body))
    const ids = new Set(lists.map((l) => l.body.security_groups.filter((g: Json) => g.name === 'default').map((g: Json) => g.id).join()))
    assert.equal(ids.size, 1)
    assert.equal([...ids][0].split(',').length, 1)
  })
})
