/**
 * SQLite's errors under the names errors.ts and the repositories match on. node:sqlite's API (the binding in
 * store.ts) reports every failure as code ERR_SQLITE_ERROR with SQLite's numeric extended result code beside it;
 * SQLite's own names for those numbers (SQLITE_CONSTRAINT_UNIQUE, SQLITE_BUSY…) are what a repository tells
 * apart, so the error's `code` is set to the name. Numbers from https://www.sqlite.org/rescode.html.
 */

/** Extended result codes by number, the ones a caller tells apart; others keep the primary code's name. */
const EXTENDED_CODE_NAMES: Record<number, string> = {
  275: 'SQLITE_CONSTRAINT_CHECK',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
  2579: 'SQLITE_CONSTRAINT_ROWID',
  261: 'SQLITE_BUSY_RECOVERY',
  517: 'SQLITE_BUSY_SNAPSHOT',
  773: 'SQLITE_BUSY_TIMEOUT',
}

/** Primary result codes (the low byte of an extended code). */
const PRIMARY_CODE_NAMES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  25: 'SQLITE_RANGE',
  26: 'SQLITE_NOTADB',
}

/** SQLite's name for a result code, e.g. 2067 → SQLITE_CONSTRAINT_UNIQUE. */
export function sqliteCodeName(code: number): string {
  return EXTENDED_CODE_NAMES[code] ?? PRIMARY_CODE_NAMES[code & 0xff] ?? `SQLITE_${code}`
}

/** The error with `code` set to SQLite's name when it came from SQLite; anything else unchanged. */
export function withCodeName(err: unknown): unknown {
  const e = err as { code?: unknown; errcode?: unknown } | null
  if (e && e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') e.code = sqliteCodeName(e.errcode)
  return err
}

/** Runs a call into SQLite, naming the code of what it throws. */
export function withSqliteErrorCodes<T>(call: () => T): T {
  try {
    return call()
  } catch (err) {
    throw withCodeName(err)
  }
}
