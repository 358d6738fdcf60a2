/**
 * Start-up time of a spawned pcc-server until /readyz answers 200: on an empty data dir (migrations,
 * bootstrap, password hash, key generation) and on a populated one (10 000 task rows and 1 000 users).
 * Median of 3 starts each, SQLite.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStore } from '../src/server/storage/store.js'
import type { BenchRun } from './harness.js'
import { median, spawnPcc, untilReady } from './procs.js'

const RUNS = 3
const SETTINGS = { PCC_ADMIN_PASSWORD: 'bench-admin-password', PCC_LOG_LEVEL: 'warn' }

async function startOnce(dataDir: string): Promise<number> {
  const started = Date.now()
  const server = await spawnPcc({ PCC_DATA_DIR: dataDir, ...SETTINGS })
  try {
    return await untilReady(server.url, started)
  } finally {
    await server.stop()
  }
}

async function populate(dataDir: string): Promise<void> {
  // A first start creates the schema and the bootstrap rows; the bulk rows go in directly, in batches.
  await startOnce(dataDir)
  const store = await openStore({ dataDir, databaseUrl: '' })
  try {
    const now = Date.now()
    await store.db.transaction().execute(async (tx) => {
      for (let batch = 0; batch < 100; batch++) {
        const rows = Array.from({ length: 100 }, (_, i) => ({
          id: randomUUID(), kind: 'bench', subject_id: null, payload: JSON.stringify({ n: batch * 100 + i }), status: 'done' as const, attempts: 1,
          max_attempts: 5, run_after: now, lease_owner: null, lease_expires_at: null, last_error: null, idempotency_key: null,
          created_at: now, updated_at: now, finished_at: now,
        }))
        await tx.insertInto('tasks').values(rows).execute()
      }
      for (let batch = 0; batch < 10; batch++) {
        const rows = Array.from({ length: 100 }, (_, i) => ({
          id: randomUUID().replaceAll('-', ''), domain_id: 'default', name: `user-${batch * 100 + i}`, enabled: 1, default_project_id: null,
          description: '', email: null, options: '{}', extra: '{}', password_hash: null, password_created_at: null, password_expires_at: null,
          failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
        }))
        await tx.insertInto('users').values(rows).execute()
      }
    })
  } finally {
    await store.close()
  }
}

export const run: BenchRun = async () => {
  const dirs: string[] = []
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-bench-start-'))
    dirs.push(dir)
    return dir
  }
  try {
    const empty: number[] = []
    for (let i = 0; i < RUNS; i++) empty.push(await startOnce(fresh()))
    const populated = fresh()
    await populate(populated)
    const full: number[] = []
    for (let i = 0; i < RUNS; i++) full.push(await startOnce(populated))
    return [
      { figure: 'start-up to /readyz 200, empty data dir (SQLite)', value: median(empty), unit: 'ms', target: '< 15000 ms', note: `median of ${RUNS}: ${empty.join(', ')}` },
      {
        figure: 'start-up to /readyz 200, 10k tasks + 1k users (SQLite)',
        value: median(full),
        unit: 'ms',
        target: '< 15000 ms',
        note: `median of ${RUNS}: ${full.join(', ')}`,
      },
    ]
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  }
}
