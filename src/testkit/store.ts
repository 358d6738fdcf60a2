/**
 * A bare store for storage and queue tests: a fresh SQLite file in a temp dir or a fresh PostgreSQL database,
 * opened exactly as the server opens it, optionally migrated.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate } from '../server/storage/migrations/index.js'
import { openStore, type Store } from '../server/storage/store.js'
import type { Dialect } from './harness.js'
import { freshDatabase, migratedDatabase } from './postgres.js'

export interface TestStore {
  store: Store
  dialect: Dialect
  dataDir: string
  /** Empty for SQLite. */
  databaseUrl: string
  /** Another store on the same database (a second process's view; SQLite: a second connection to the file). */
  reopen(): Promise<Store>
  close(): Promise<void>
}

export async function openTestStore(dialect: Dialect, options: { migrate?: boolean } = {}): Promise<TestStore> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcc-store-'))
  const migrated = options.migrate ?? true
  const databaseUrl = dialect === 'postgres' ? await (migrated ? migratedDatabase() : freshDatabase()) : ''
  const store = await openStore({ dataDir, databaseUrl })
  if (migrated) await migrate(store)
  const others: Store[] = []
  return {
    store,
    dialect,
    dataDir,
    databaseUrl,
    reopen: async () => {
      const other = await openStore({ dataDir, databaseUrl })
      others.push(other)
      return other
    },
    close: async () => {
      for (const other of others) await other.close().catch(() => {})
      await store.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
