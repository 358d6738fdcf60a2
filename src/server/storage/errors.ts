/**
 * Recognising constraint violations from either driver, so a repository can turn "that name is taken" into a
 * 409 without knowing the dialect: better-sqlite3 reports SQLITE_CONSTRAINT_* codes, pg reports SQLSTATE codes.
 */

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** A UNIQUE or PRIMARY KEY constraint rejected the write. */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err)
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** A FOREIGN KEY constraint rejected the write (the referenced row is missing, or still referenced). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = codeOf(err)
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
}
