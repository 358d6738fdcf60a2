/**
 * Starts a real pcc server for a test: real HTTP on 127.0.0.1 (port chosen by the OS), a fresh SQLite data
 * dir or a fresh PostgreSQL database, the real bootstrap. Helpers log in as the bootstrap admin and call the
 * APIs with plain fetch.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { loadConfig } from '../server/config/load.js'
import type { Config } from '../server/config/settings.js'
import { createLogger } from '../server/logger.js'
import { startServer, type RunningServer } from '../server/runtime.js'
import type { TaskHandler } from '../server/tasks/runner.js'
import { migratedDatabase } from './postgres.js'

export type Dialect = 'sqlite' | 'postgres'
export const DIALECTS: Dialect[] = ['sqlite', 'postgres']

export const ADMIN_PASSWORD = 'admin-test-password'

export interface TestServer extends RunningServer {
  dataDir: string
  config: Config
  /** Stops the server and removes its data dir. */
  close(): Promise<void>
}

export interface TestServerOptions {
  dialect?: Dialect
  /** Settings as environment variables (PCC_*), applied on top of the test defaults. */
  env?: Record<string, string>
  /** Reuse a data dir / database (restart tests). */
  dataDir?: string
  databaseUrl?: string
  handlers?: Map<string, TaskHandler>
  /** Listen on a free port chosen first and make it the public URL, so catalog URLs work for real clients. */
  publicUrlFromListen?: boolean
  /** The address to listen on (default 127.0.0.1); only ever a loopback or a test network's bridge (testkit/netns.ts). */
  listenAddress?: string
}

/** A port free right now on 127.0.0.1 (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const port = (probe.address() as AddressInfo).port
      probe.close(() => resolve(port))
    })
  })
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'pcc-test-'))
  const databaseUrl = options.databaseUrl ?? (options.dialect === 'postgres' ? await migratedDatabase() : '')
  const port = options.publicUrlFromListen ? await freePort() : 0
  const address = options.listenAddress ?? '127.0.0.1'
  const config = loadConfig({
    argv: [],
    env: {
      PCC_LISTEN: `${address}:${port}`,
      PCC_PUBLIC_URL: port ? `http://${address}:${port}` : 'http://127.0.0.1:1',
      PCC_DATA_DIR: dataDir,
      PCC_DATABASE_URL: databaseUrl,
      PCC_ADMIN_PASSWORD: ADMIN_PASSWORD,
      PCC_SIMULATED_HOSTS: '0',
      PCC_LOG_LEVEL: process.env.PCC_TEST_LOG_LEVEL ?? 'silent',
      ...options.env,
    },
  })
  const server = await startServer(config, createLogger(config.logLevel), options.handlers).catch((err: unknown) => {
    // A start a test expects to fail leaves no data dir behind either.
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    throw err
  })
  return {
    ...server,
    dataDir,
    config,
    close: async () => {
      await server.stop()
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
