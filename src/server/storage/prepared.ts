/**
 * Statements built and compiled by Kysely once, then run with each call's values: for the reads clients poll all
 * day (issue 30). Kysely builds an immutable operation tree (freezing and cloning a node per clause) and compiles
 * it to SQL on every call; for a one-row read by key that took about as long as SQLite running it (measured
 * 2026-11-30: 50 µs built and run against 27 µs run from a kept compilation, docs/benchmarks.md).
 *
 * `prepared((db, id: string) => db.selectFrom('networks').selectAll().where('id', '=', id))` answers a function
 * that runs the same query. The builder is called once per dialect with markers in place of the values and the
 * markers found in the compiled parameters are replaced on each call; any other parameter (a constant the builder
 * wrote, `deleted = 0`) stays as compiled. So a builder may use its values only as values of the query: not in
 * JavaScript conditions, not as a list for `in` (one value here is one `?`): the type allows only strings and
 * numbers, and the first compilation checks that each value is a parameter. The builder takes its values as
 * plain parameters (no defaults, no rest), so that their count is the function's length.
 */
import { createQueryId, type CompiledQuery, type Compilable, type Kysely } from 'kysely'

/** Stands for the call's value at its position until the query is compiled. */
class Marker {
  constructor(readonly position: number) {}
}

type Value = string | number

/** Where each compiled parameter comes from: a call's value (its position) or the constant itself. */
interface Kept {
  compiled: CompiledQuery
  sources: (Marker | unknown)[]
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any database schema: the builder's own types check the query
type AnyDb = Kysely<any>

export function prepared<D extends AnyDb, P extends Value[], R>(build: (db: D, ...values: P) => Compilable<R>): (db: D, ...values: P) => Promise<R[]> {
  const arity = build.length - 1
  // Per adapter, that is per dialect: a transaction shares its database's adapter and compiles alike.
  const kept = new WeakMap<object, Kept>()
  const compile = (db: D): Kept => {
    const markers = Array.from({ length: arity }, (_, i) => new Marker(i))
    const compiled = build(db, ...(markers as unknown as P)).compile()
    const found = new Set(compiled.parameters.filter((p): p is Marker => p instanceof Marker).map((m) => m.position))
    if (found.size !== arity) throw new Error(`prepared statement: ${arity - found.size} of its values are not parameters of ${compiled.sql}`)
    return { compiled, sources: [...compiled.parameters] }
  }
  return async (db, ...values) => {
    const adapter = db.getExecutor().adapter
    let entry = kept.get(adapter)
    if (!entry) kept.set(adapter, (entry = compile(db)))
    const parameters = entry.sources.map((p) => (p instanceof Marker ? values[p.position] : p))
    // A query id of its own, as every built query has (plugins key their state by it).
    const result = await db.executeQuery<R>({ ...entry.compiled, queryId: createQueryId(), parameters } as CompiledQuery<R>)
    return result.rows
  }
}
