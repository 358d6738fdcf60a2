import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { freePort } from '../../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { seedCreate, waitFor } from '../../src/testkit/compute-seed.js'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { SqlTaskQueue } from '../../src/server/tasks/sql-queue.js'
import type { AppDeps } from '../../src/server/deps.js'
import type { GuestInfo } from '../../src/server/drivers/compute/driver.js'
import { setHostRole } from '../../src/server/hosts/host-protocol.js'
import { sha256 } from '../../src/server/onboarding/onboarding-service.js'

const MAIN = join(process.cwd(), 'dist/src/server/main.js')
const PASSWORD = 'restart-test-password'

function startProcess(env: Record<string, string>): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PCC_')))
    const child = spawn(process.execPath, [MAIN], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('pcc is running')) {
        clearTimeout(timer)
        resolve(child)
      }
    })
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}: ${out}`))
    })
  })
}

/** A registration token written straight into the store (this branch has no identity API to log in through). */
async function registrationToken(store: Store): Promise<string> {
  const token = `pccr_${randomBytes(32).toString('base64url')}`
  const now = Date.now()
  await store.db
    .insertInto('registration_tokens')
    .values({ id: randomUUID(), token_hash: sha256(token), note: null, created_by: 'test', created_at: now, expires_at: now + 600_000, used_at: null, used_by_host: null })
    .execute()
  return token
}

describe('control-plane restart while an agent works: nothing lost, nothing done twice', () => {
  let dataDir: string
  let store: Store
  let env: Record<string, string>
  let url: string
  let child: ChildProcess | undefined
  let agent: ChildProcess | undefined
  let host: ScratchHost
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-agent-restart-'))
    const databaseUrl = await freshDatabase()
    const port = await freePort()
    url = `http://127.0.0.1:${port}`
    env = {
      PCC_DATABASE_URL: databaseUrl,
      PCC_DATA_DIR: dataDir,
      PCC_LISTEN: `127.0.0.1:${port}`,
      PCC_PUBLIC_URL: url,
      PCC_ADMIN_PASSWORD: PASSWORD,
      PCC_SIMULATED_HOSTS: '0',
      PCC_TASK_LEASE_SECONDS: '2',
      PCC_RECONCILE_SECONDS: '0',
      PCC_HOST_DOWN_AFTER_SECONDS: '30',
      PCC_LOG_LEVEL: 'warn',
    }
    child = await startProcess(env)
    store = await openStore({ dataDir, databaseUrl })
  })
  after(async () => {
    if (agent) await killAgent(agent)
    child?.kill('SIGKILL')
    await store?.close()
    rmSync(dataDir, { recursive: true, force: true })
    if (host) rmSync(host.root, { recursive: true, force: true })
  })

  it('SIGKILLs the control plane in the middle of 12 builds on the agent host; after the restart all are ACTIVE with one guest each, booted once', async () => {
    host = scratchHost({ hostname: 'restart-host', controller: url, registrationToken: await registrationToken(store), delayMs: 150, vcpus: 64, memoryMb: 64000 })
    agent = spawnAgent(host.root)
    const db = store.db
    await waitFor(async () => db.selectFrom('hosts').select('id').where('id', '=', host.hostId).executeTakeFirst(), 20_000, 100)
    // What PUT /resmgr/v1/hosts/{id}/roles/hypervisor does (its API is tested in test/onboarding).
    await setHostRole(db, host.hostId, 'hypervisor', 'applying')
    await waitFor(async () => db.selectFrom('host_roles').select('state').where('host_id', '=', host.hostId).where('state', '=', 'ok').executeTakeFirst(), 20_000, 100)

    const deps = { store, queue: new SqlTaskQueue(store, { leaseMs: 2000 }), runner: { wake() {} } } as unknown as AppDeps
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(...(await seedCreate(deps, { name: `restart-${i}` })).serverIds)
    await waitFor(async () => {
      const n = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'active').execute()
      const inFlight = await db.selectFrom('host_commands').select('id').where('status', '=', 'delivered').execute()
      return n.length >= 2 && inFlight.length > 0 ? true : undefined
    }, 60_000, 10)
    child!.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    child = undefined
    // The agent keeps working and keeps trying to report while nobody listens.
    await new Promise((r) => setTimeout(r, 1500))
    child = await startProcess(env)

    const finals = await waitFor(async () => {
      const rows = await db.selectFrom('servers').select(['id', 'vm_state', 'task_state', 'host']).where('id', 'in', ids).execute()
      return rows.every((r) => r.task_state === null && r.vm_state !== 'building') ? rows : undefined
    }, 90_000, 100)
    assert.deepEqual(
      finals.filter((r) => r.vm_state !== 'active'),
      [],
      'every server is ACTIVE',
    )
    assert.ok(finals.every((r) => r.host === 'restart-host'))
    // The agent's truth: one guest per server, each booted once.
    const guests = await waitFor(async () => {
      const state = JSON.parse(readFileSync(join(host.root, 'var/lib/pcc/agent-state.json'), 'utf8')) as { guests: GuestInfo[]; done: Record<string, { posted: boolean }> }
      return state.guests.length === ids.length && Object.values(state.done).every((d) => d.posted) ? state.guests : undefined
    }, 20_000, 100)
    assert.deepEqual(guests.map((g) => g.serverId).sort(), [...ids].sort())
    assert.ok(guests.every((g) => g.boots === 1), `boots: ${guests.map((g) => g.boots).join(',')}`)
    // No command left behind undelivered or unanswered.
    const open = await db.selectFrom('host_commands').select(['op', 'status']).where('status', 'in', ['queued', 'delivered']).execute()
    assert.deepEqual(open, [])
    const usage = await db.selectFrom('hosts').select(['vcpus_used', 'running_vms']).where('id', '=', host.hostId).executeTakeFirstOrThrow()
    assert.equal(usage.vcpus_used, ids.length)
  })
})
