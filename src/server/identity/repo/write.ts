/**
 * Every identity write runs here: one transaction that also bumps the identity generation, so each process's
 * token-validation caches reload (a disabled user, a new password, a removed role take effect everywhere).
 */
import { randomUUID } from 'node:crypto'
import { conflict } from '../../../contracts/errors.js'
import type { Db, Store } from '../../storage/store.js'
import { touchIdentity } from '../generation.js'

export async function identityWrite<T>(store: Store, fn: (tx: Db) => Promise<T>): Promise<T> {
  try {
    return await store.db.transaction().execute(async (tx) => {
      const result = await fn(tx)
      await touchIdentity(tx)
      return result
    })
  } catch (err) {
    // Repositories check names and references first; a concurrent writer can still win the race, and the
    // database's constraint then speaks. That is a conflict, not a server error.
    if (isConstraintViolation(err)) throw conflict('Conflict occurred attempting to store the record: a concurrent change got there first.', { cause: err })
    throw err
  }
}

/** Unique or foreign-key violation, on PostgreSQL (SQLSTATE 23505/23503) or SQLite (SQLITE_CONSTRAINT_*). */
function isConstraintViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return code === '23505' || code === '23503' || (typeof code === 'string' && /^SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY|FOREIGNKEY)$/.test(code))
}

/** Keystone-style ids: a UUID4 as 32 hex characters. */
export function newIdentityId(): string {
  return randomUUID().replaceAll('-', '')
}

/** Extra attributes Keystone keeps on a record besides its own columns (stored as JSON text). */
export type Extra = Record<string, unknown>

export function parseJson<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback
  try {
    return JSON.parse(text) as T
  } catch {
    return fallback
  }
}

/** The body's attributes that are not columns: they become the record's extra attributes. */
export function extraOf(body: Record<string, unknown>, columns: readonly string[]): Extra {
  const out: Extra = {}
  for (const [key, value] of Object.entries(body)) if (!columns.includes(key) && key !== 'id' && key !== 'links') out[key] = value
  return out
}
