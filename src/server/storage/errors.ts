/**
 * Recognising constraint violations from either driver, so a repository can turn "that name is taken" into a
 * 409 without knowing the dialect: SQLite errors carry SQLITE_CONSTRAINT_* codes (sqlite-error-codes.ts), pg SQLSTATE codes.
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

/**
 * The database refused a value itself (SQLSTATE class 22, "data exception": a NUL in text, a number past the
 * column's range, text that is not valid in the encoding…): the input was invalid, not the server.
 */
export function isDataException(err: unknown): boolean {
  const code = codeOf(err)
  return code !== undefined && (/^22[0-9A-Z]{3}$/.test(code) || code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH')
}
