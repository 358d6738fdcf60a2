/**
 * Opens the store: Kysely over SQLite (a WAL-mode file in the data dir) or over pg (PostgreSQL).
 * One implementation serves both; what differs is declared in capabilities.ts.
 *
 * The SQLite binding is @photostructure/sqlite (node:sqlite's API for Node 20): its binaries are inside its npm
 * package, so `npm install` needs no compiler; better-sqlite3's are on GitHub, out of reach of many machines, and it
 * compiled for a minute there (docs/benchmarks.md has both measured).
 */
import { mkdirSync, accessSync, constants as fsConstants } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync, type DatabaseSyncInstance, type StatementSyncInstance } from '@photostructure/sqlite'
import pg from 'pg'
import { Kysely, PostgresDialect, SqliteDialect, sql, type SqliteDatabase, type SqliteStatement } from 'kysely'
import type { Database } from './schema.js'
import { POSTGRES_CAPABILITIES, SQLITE_CAPABILITIES, type Capabilities } from './capabilities.js'
import { startCheckpointer } from './sqlite-checkpointer.js'
import { statementName, watchCommits } from './prepared.js'
import { SqliteChangeWatch } from './sqlite-change-watch.js'
import { withCodeName, withSqliteErrorCodes } from './sqlite-error-codes.js'

export type Db = Kysely<Database>

export interface Store {
  db: Db
  dialect: 'sqlite' | 'postgres'
  capabilities: Capabilities
  /** Things about the database the operator should know (logged at start), e.g. a collation that orders text unlike SQLite. */
  warnings: string[]
  /** Throws when the database cannot answer a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** Thrown when the store cannot be opened; the message says which file or server and why. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}

export interface StoreOptions {
  dataDir: string
  databaseUrl: string
  /** Connections in the PostgreSQL pool. */
  poolSize?: number
  /** Told about trouble after the start that the operator should know of (default: nothing). */
  onWarning?: (message: string) => void
}

export async function openStore(options: StoreOptions): Promise<Store> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openSqlite(options.dataDir, options.onWarning ?? (() => {}))
}

function openSqlite(dataDir: string, onWarning: (message: string) => void): Store {
  const file = join(dataDir, 'pcc.sqlite')
  let raw: DatabaseSyncInstance
  try {
    mkdirSync(dataDir, { recursive: true })
    accessSync(dataDir, fsConstants.W_OK)
    raw = new DatabaseSync(file)
    raw.exec('PRAGMA journal_mode = WAL')
    raw.exec('PRAGMA synchronous = NORMAL')
    raw.exec('PRAGMA busy_timeout = 5000')
    raw.exec('PRAGMA foreign_keys = ON')
    // Reads the schema, so a file that is not a database fails here and not on the first request.
    raw.prepare('SELECT count(*) FROM sqlite_master').get()
  } catch (err) {
    throw new StoreOpenError(`cannot open the SQLite database ${file}: ${(err as Error).message}`)
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) })
  const commits = new SqliteChangeWatch(`${file}-shm`)
  watchCommits(db, commits)
  const checkpointer = startCheckpointer(raw, file, (err) => onWarning(`WAL checkpoints are back on the main thread: ${err.message}`))
  return {
    db,
    dialect: 'sqlite',
    capabilities: SQLITE_CAPABILITIES,
    warnings: [],
    ping: async () => {
      await sql`SELECT 1`.execute(db)
    },
    close: async () => {
      // The worker's connection closes first, so the main one is the last and can take the WAL away (closeLast).
      await checkpointer.stop()
      await db.destroy()
      commits.close()
    },
  }
}

/** Prepared statements kept per connection; beyond this the least recently used are dropped. */
const STATEMENT_CACHE_SIZE = 500

/**
 * The SQLite handle as Kysely sees it, with two speed-ups measured on the server list (60 columns × 1,000 rows):
 * statements are cached by SQL text (Kysely prepares every query afresh, and preparing costs as much as running a
 * small indexed query), and rows are read as arrays and turned into objects by a function compiled per statement
 * (about twice as fast as the binding's own objects for wide rows). Reusing a statement is safe because the one
 * SQLite connection runs one query at a time (Kysely's connection mutex). Errors carry SQLite's code names, as
 * errors.ts expects (sqlite-error-codes.ts).
 */
function withStatementCache(raw: DatabaseSyncInstance): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>()
  const prepare = (source: string): SqliteStatement => {
    let statement = cache.get(source)
    if (statement) {
      cache.delete(source)
    } else {
      statement = driverStatement(withSqliteErrorCodes(() => raw.prepare(source)))
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    }
    cache.set(source, statement)
    return statement
  }
  return { prepare, close: () => closeLast(raw) }
}

/**
 * Closes the last connection with everything in the database file and no WAL or shared-memory file beside it,
 * so a stopped server's data dir holds one file to copy. SQLite's close does this itself, but only once every
 * statement is finalized, and the binding finalizes the cached ones when they are garbage collected, after the
 * close: leaving WAL mode checkpoints and deletes the files now, and going back to it marks the file WAL again
 * (which creates no file until the next write). Another connection still open (a local command) keeps WAL mode
 * busy; the files then stay, as SQLite leaves them.
 */
function closeLast(raw: DatabaseSyncInstance): void {
  try {
    raw.exec('PRAGMA journal_mode = DELETE')
    raw.exec('PRAGMA journal_mode = WAL')
  } catch {
    // Busy: not the last connection.
  }
  raw.close()
}

function driverStatement(statement: StatementSyncInstance): SqliteStatement {
  const run = (p: readonly unknown[]) => withSqliteErrorCodes(() => statement.run(...p))
  // A statement that returns rows has result columns (a SELECT, a PRAGMA that answers, … RETURNING).
  const names = statement.columns().map((c) => c.name)
  if (names.length === 0) {
    const fail = (): never => {
      throw new Error('this statement returns no rows')
    }
    return { reader: false, all: fail, iterate: fail, run }
  }
  // Later columns win over earlier ones of the same name, as in the binding's own objects.
  const toObject = new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}}`) as (row: unknown[]) => unknown
  statement.setReturnArrays(true)
  return {
    reader: true,
    all: (p) => withSqliteErrorCodes(() => statement.all(...p) as unknown[][]).map(toObject),
    run,
    iterate: function* (p) {
      try {
        for (const row of statement.iterate(...p)) yield toObject(row as unknown[])
      } catch (err) {
        throw withCodeName(err)
      }
    },
  }
}

/** int8 and numeric. */
const NUMERIC_OIDS = new Set([20, 1700])

async function openPostgres(url: string, poolSize: number): Promise<Store> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5000,
    // BIGINT (int8) columns hold epoch milliseconds and count(*) answers int8; sum() of a bigint answers numeric.
    // Both come back as numbers, as they do from SQLite (exact up to 2^53, far beyond any time or count here).
    types: { getTypeParser: (oid: number, format?: string) => (NUMERIC_OIDS.has(oid) ? Number : pg.types.getTypeParser(oid, format as 'text')) } as pg.CustomTypesConfig,
  })
  // A lost connection must not crash the process; the next query reconnects. The pool reports an idle client's
  // error; a checked-out client emits its own 'error' besides failing its query, and with no listener that would
  // be an uncaught exception. The failed query already tells its caller.
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
    nameCompiledStatements(client)
  })
  const warnings: string[] = []
  try {
    const client = await pool.connect()
    try {
      // Lists sort by name and page with markers; both dialects must order text by code point, as SQLite does.
      // Asked of the database itself, so libc, ICU and builtin locale providers are all judged alike.
      const { rows } = await client.query<{ code_point: boolean; collation: string }>(
        "SELECT ('B' < '_' AND '_' < 'a' AND 'a' < 'b' AND 'b' < 'ä') AS code_point, datcollate AS collation FROM pg_database WHERE datname = current_database()",
      )
      if (rows[0] && !rows[0].code_point) {
        warnings.push(
          `the database's collation (${rows[0].collation}) does not sort text by code point as SQLite does, so lists sort differently: create the database with TEMPLATE template0 LOCALE 'C.UTF-8'`,
        )
      }
    } finally {
      client.release()
    }
  } catch (err) {
    await pool.end().catch(() => {})
    throw new StoreOpenError(`cannot reach the PostgreSQL database ${redactUrl(url)}: ${(err as Error).message}`)
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    db,
    dialect: 'postgres',
    capabilities: POSTGRES_CAPABILITIES,
    warnings,
    ping: async () => {
      await sql`SELECT 1`.execute(db)
    },
    close: () => db.destroy(),
  }
}

/**
 * The statements compiled once (storage/prepared.ts) run as named prepared statements, so a connection parses and
 * plans each once: PostgreSQL plans an unnamed statement on every call, most of the work of a one-row read by key.
 */
function nameCompiledStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (config: unknown, values?: unknown) => Promise<unknown>
  client.query = ((config: unknown, values?: unknown) => {
    const name = typeof config === 'string' ? statementName(config) : undefined
    return name === undefined ? query(config, values) : query({ name, text: config, values })
  }) as typeof client.query
}

/** A database URL with its password removed, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return '(unparseable URL)'
  }
}
