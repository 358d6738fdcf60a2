/**
 * What "a refused request changes nothing" is checked against: a digest of every row of every table, per
 * table, order-insensitive. The tables listed in VOLATILE change without any request and are left out, each
 * with the reason.
 */
import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Store } from '../../server/storage/store.js'
import { inParallel } from '../compute-api.js'

/** Tables that change on their own (timers, caches), not because of a request. */
export const VOLATILE: Record<string, string> = {
  kysely_migration: 'written only by migrations at start',
  kysely_migration_lock: 'written only by migrations at start',
  cluster_jobs: "the periodic jobs' leases and due times, taken and renewed on timers (src/server/tasks/cluster-jobs.ts)",
  metric_latest: "hosts' samples of their guests and themselves, every 10 s (docs/metrics.md)",
  metric_slots: "the history rings those samples fill, every 10 s (and thousands of rows: digesting them per request stalled the fuzzer)",
}

/** Columns that change on their own, or that a refusal records on purpose, per table, with the reason. */
export const VOLATILE_COLUMNS: Record<string, Record<string, string>> = {
  hosts: { last_heartbeat_at: 'simulated hosts and agents heartbeat on a timer' },
  users: {
    failed_auth_count: 'a failed authentication (401) is counted on purpose: the lockout reads it (Keystone does the same)',
    failed_auth_at: 'the time of that failed authentication',
  },
}

/** Tables read at once; the pool holds 10 connections (src/server/storage/store.ts). */
const DIGEST_WIDTH = 4

/**
 * Per table, the hash of its rows and, where they were read into this process, the rows themselves (as sorted
 * JSON lines) to show what changed.
 */
export type Digest = Map<string, { hash: string; lines?: string[] }>

const tablesOf = new WeakMap<Db, string[]>()

async function tablesToDigest(db: Db): Promise<string[]> {
  let tables = tablesOf.get(db)
  if (!tables) tablesOf.set(db, (tables = (await db.introspection.getTables()).map((t) => t.name).filter((name) => !(name in VOLATILE)).sort()))
  return tables
}

/** The digest of every table but the volatile ones; `store` says how to read them. */
export async function stateDigest(store: Pick<Store, 'db' | 'dialect'>): Promise<Digest> {
  const tables = await tablesToDigest(store.db)
  return store.dialect === 'postgres' ? digestInPostgres(store.db, tables) : digestRows(store.db, tables)
}

/**
 * SQLite answers in process, so its rows are read and hashed here, keeping them to show a change. Reading every
 * row of every table over PostgreSQL's wire cost ~0.1 s per digest, a third of the fuzz suite's time on it.
 */
async function digestRows(db: Db, tables: string[]): Promise<Digest> {
  const selected = await inParallel(tables, DIGEST_WIDTH, (table) => sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db))
  const digest: Digest = new Map()
  for (const [n, table] of tables.entries()) {
    const skip = VOLATILE_COLUMNS[table] ?? {}
    const lines = selected[n].rows.map((r) => JSON.stringify(r, (k, v: unknown) => (k in skip ? undefined : typeof v === 'bigint' ? v.toString() : v))).sort()
    digest.set(table, { hash: createHash('sha256').update(lines.join('\n')).digest('base64'), lines })
  }
  return digest
}

/** PostgreSQL hashes each table's rows itself (md5 of the sorted rows' JSON), all tables in one statement. */
async function digestInPostgres(db: Db, tables: string[]): Promise<Digest> {
  const perTable = tables.map((table) => {
    const row = Object.keys(VOLATILE_COLUMNS[table] ?? {}).reduce((json, column) => sql`${json} - ${column}`, sql`to_jsonb(r)`)
    return sql`select ${table} as name, md5(coalesce(string_agg(h, '' order by h), '')) as hash from (select md5((${row})::text) as h from ${sql.table(table)} r) s`
  })
  const parts = await inParallel(chunks(perTable, DIGEST_WIDTH), DIGEST_WIDTH, (part) => sql<{ name: string; hash: string }>`${sql.join(part, sql` union all `)}`.execute(db))
  return new Map(parts.flatMap((p) => p.rows).map((r) => [r.name, { hash: r.hash }]))
}

/** `items` dealt into `n` parts. */
function chunks<T>(items: T[], n: number): T[][] {
  return Array.from({ length: n }, (_, i) => items.filter((_, j) => j % n === i))
}

/** What differs between two digests: per changed table, the rows gone and the rows new (a few of each). */
export function changes(before: Digest, after: Digest): string[] {
  const out: string[] = []
  for (const [table, now] of after) {
    const then = before.get(table)
    if (then?.hash === now.hash) continue
    if (!now.lines || !then?.lines) {
      out.push(`${table}: its rows changed (replay on SQLite to see which)`)
      continue
    }
    const old = new Set(then.lines)
    const added = now.lines.filter((l) => !old.has(l))
    const kept = new Set(now.lines)
    const removed = then.lines.filter((l) => !kept.has(l))
    out.push(`${table}: ${[...removed.slice(0, 2).map((l) => `- ${l.slice(0, 400)}`), ...added.slice(0, 2).map((l) => `+ ${l.slice(0, 400)}`)].join(' ')}`)
  }
  return out
}
