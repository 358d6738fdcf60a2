import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { seedCreate, waitFor } from '../../src/testkit/compute-seed.js'
import { capacityProblems } from '../../src/testkit/compute-trace.js'
import { openStore, type Store } from '../../src/server/storage/store.js'
import { SqlTaskQueue } from '../../src/server/tasks/sql-queue.js'
import type { AppDeps } from '../../src/server/deps.js'

const MAIN = join(process.cwd(), 'dist/src/server/main.js')

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

describe('crash: the server process is SIGKILLed in the middle of 300 creates', () => {
  let dataDir: string
  let store: Store
  let env: Record<string, string>
  let child: ChildProcess | undefined
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-crash-'))
    const databaseUrl = await freshDatabase()
    env = {
      PCC_DATABASE_URL: databaseUrl,
      PCC_DATA_DIR: dataDir,
      PCC_LISTEN: '127.0.0.1:0',
      PCC_ADMIN_PASSWORD: 'crash-test-password',
      PCC_SIMULATED_HOSTS: '3',
      PCC_SIMULATED_DELAY_MS: '15',
      PCC_TASK_LEASE_SECONDS: '2',
      PCC_RECONCILE_SECONDS: '0',
      PCC_LOG_LEVEL: 'warn',
    }
    child = await startProcess(env)
    store = await openStore({ dataDir, databaseUrl })
  })
  after(async () => {
    child?.kill('SIGKILL')
    await store?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('after a restart every accepted server is ACTIVE or ERROR with a fault, none in BUILD, none lost, no claim leaked', async () => {
    // Accepted the way the API accepts them: rows, instance action and build task committed together.
    const deps = { store, queue: new SqlTaskQueue(store, { leaseMs: 2000 }), runner: { wake() {} } } as unknown as AppDeps
    const creates = []
    for (let i = 0; i < 300; i++) creates.push(await seedCreate(deps, { name: `crash-${i}` }))
    const ids = creates.map((c) => c.serverIds[0])
    const db = store.db
    // Kill it once part of the work is done and part is in flight.
    await waitFor(async () => {
      const n = await db.selectFrom('servers').select('id').where('id', 'in', ids).where('vm_state', '=', 'active').execute()
      return n.length >= 30 ? true : undefined
    }, 60_000, 10)
    child!.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    child = undefined
    const midway = await db.selectFrom('servers').select(['vm_state', 'task_state']).where('id', 'in', ids).execute()
    const inFlight = midway.filter((r) => r.vm_state === 'building').length
    assert.ok(inFlight > 0, 'the kill left servers in BUILD')

    child = await startProcess(env)
    await waitFor(async () => {
      const left = await db.selectFrom('servers').select('id').where('id', 'in', ids).where((eb) => eb.or([eb('vm_state', '=', 'building'), eb('task_state', 'is not', null)])).execute()
      return left.length === 0 ? true : undefined
    }, 120_000, 200)

    const rows = await db.selectFrom('servers').selectAll().where('id', 'in', ids).execute()
    assert.equal(rows.length, 300, 'none lost')
    const faults = new Set((await db.selectFrom('instance_faults').select('server_id').where('server_id', 'in', ids).execute()).map((f) => f.server_id))
    for (const r of rows) {
      assert.ok(r.vm_state === 'active' || (r.vm_state === 'error' && faults.has(r.id)), `${r.id}: ${r.vm_state}/${r.task_state}`)
    }
    const allocations = await db.selectFrom('allocations').selectAll().where('server_id', 'in', ids).execute()
    const active = rows.filter((r) => r.vm_state === 'active')
    assert.equal(allocations.length, active.length, 'one claim per ACTIVE server, none for failed ones')
    for (const r of active) assert.ok(allocations.some((a) => a.server_id === r.id && a.host_id === r.host_id))
    assert.deepEqual(await capacityProblems(db), [])
    const actions = await db.selectFrom('instance_actions').select(['server_id', 'finish_time']).where('server_id', 'in', ids).execute()
    assert.equal(actions.filter((a) => a.finish_time !== null).length, 300, 'every create action finished')
  })
})
