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

export interface PreparedOptions {
  /**
   * Keep each answer, by the call's values, for as long as the database has had no commit: on a database whose
   * store watches for commits (SQLite, `watchCommits`), outside transactions. For the stamps of reads clients poll
   * all day, which then cost no statement until something changes. Kept answers are shared, so they are frozen.
   */
  keepWhileUnchanged?: boolean
}

export function prepared<D extends AnyDb, P extends Value[], R>(build: (db: D, ...values: P) => Compilable<R>, options: PreparedOptions = {}): (db: D, ...values: P) => Promise<R[]> {
  const arity = build.length - 1
  // Per adapter, that is per dialect: a transaction shares its database's adapter and compiles alike.
  const kept = new WeakMap<object, Kept>()
  const answers = options.keepWhileUnchanged ? new KeptAnswers() : undefined
  return async (db, ...values) => {
    const adapter = db.getExecutor().adapter
    let entry = kept.get(adapter)
    if (!entry) kept.set(adapter, (entry = compileWithMarkers(arity, (markers) => build(db, ...(markers as P)))))
    const compiled = entry
    return answers ? answers.answer(db, JSON.stringify(values), () => run(db, compiled, values)) : run(db, compiled, values)
  }
}

/** Shapes of one statement kept compiled; past this many, the least recently compiled is dropped. */
const SHAPES_KEPT = 200

/**
 * As `prepared`, for a statement whose shape varies with the request (a list's filters, its sort, whether it has a
 * marker): compiled once per shape, named by the caller, and run with each call's values. The shape must name
 * everything the builder writes other than the values (which filters, how many values an `in` list has, the
 * constants); the builder gets markers in place of the values, each to be used only as a value of the query.
 */
export function preparedShapes<D extends AnyDb, R>(options: PreparedOptions = {}): (db: D, shape: string, values: unknown[], build: (markers: unknown[]) => Compilable<R>) => Promise<R[]> {
  const kept = new WeakMap<object, Map<string, Kept>>()
  const answers = options.keepWhileUnchanged ? new KeptAnswers() : undefined
  return async (db, shape, values, build) => {
    const adapter = db.getExecutor().adapter
    let shapes = kept.get(adapter)
    if (!shapes) kept.set(adapter, (shapes = new Map()))
    let entry = shapes.get(shape)
    if (!entry) {
      if (shapes.size >= SHAPES_KEPT) shapes.delete(shapes.keys().next().value!)
      shapes.set(shape, (entry = compileWithMarkers(values.length, build)))
    }
    const compiled = entry
    return answers ? answers.answer(db, `${shape}\n${JSON.stringify(values)}`, () => run(db, compiled, values)) : run(db, compiled, values)
  }
}

function compileWithMarkers(arity: number, build: (markers: unknown[]) => Compilable<unknown>): Kept {
  const markers = Array.from({ length: arity }, (_, i) => new Marker(i))
  const compiled = build(markers).compile()
  const found = new Set(compiled.parameters.filter((p): p is Marker => p instanceof Marker).map((m) => m.position))
  if (found.size !== arity) throw new Error(`prepared statement: ${arity - found.size} of its values are not parameters of ${compiled.sql}`)
  // Not a `*`: a plan kept for it would fail once another process adds a column ("cached plan must not change
  // result type"), and inside a transaction there is no running it again.
  // Two shapes may compile to the same SQL: one text, one name.
  if (!compiled.sql.includes('*') && !statementNames.has(compiled.sql) && statementNames.size < NAMED_STATEMENTS) statementNames.set(compiled.sql, `pcc_${statementNames.size + 1}`)
  return { compiled, sources: [...compiled.parameters] }
}

/**
 * Names for the SQL of the statements compiled here, which a PostgreSQL connection prepares once under its name
 * (storage/store.ts): an unnamed statement is parsed and planned on every call. Bounded, as each connection keeps
 * what it prepared; beyond the bound statements run unnamed, as do those that select `*`.
 */
const statementNames = new Map<string, string>()
const NAMED_STATEMENTS = 1000

/** The name of this SQL if a statement compiled here has it. */
export function statementName(sql: string): string | undefined {
  return statementNames.get(sql)
}

async function run<R>(db: AnyDb, entry: Kept, values: readonly unknown[]): Promise<R[]> {
  const parameters = entry.sources.map((p) => (p instanceof Marker ? values[p.position] : p))
  // A query id of its own, as every built query has (plugins key their state by it).
  const result = await db.executeQuery<R>({ ...entry.compiled, queryId: createQueryId(), parameters } as CompiledQuery<R>)
  return result.rows
}

/** What tells whether a database has had a commit since it last answered (storage/sqlite-change-watch.ts). */
export interface CommitWatch {
  /** The same number for as long as there has been no commit. */
  generation(): number
}

/** Each store's watch, by its Kysely adapter (which its transactions share: they check `isTransaction`). */
const watches = new WeakMap<object, CommitWatch>()

/** Lets the statements prepared with `keepWhileUnchanged` keep their answers on this database. */
export function watchCommits(db: AnyDb, watch: CommitWatch): void {
  watches.set(db.getExecutor().adapter, watch)
}

/**
 * Rows kept in one statement's answers; past this, all are read again. Five pages of a thousand servers' key
 * columns, or of whole rows when a list filters in JavaScript (~2 KiB each: ~10 MiB at most).
 */
const ROWS_KEPT = 5_000

/** One statement's answers under the generation they were read in, per database. */
class KeptAnswers {
  private readonly byDb = new WeakMap<CommitWatch, { generation: number; rows: number; byKey: Map<string, unknown[]> }>()

  async answer<R>(db: AnyDb, key: string, read: () => Promise<R[]>): Promise<R[]> {
    const watch = db.isTransaction ? undefined : watches.get(db.getExecutor().adapter)
    if (!watch) return read()
    // Asked before the statement runs: an answer is kept under a generation no newer than what it read, so a
    // commit during the statement makes the next call read again.
    const generation = watch.generation()
    let kept = this.byDb.get(watch)
    if (!kept || kept.generation !== generation) this.byDb.set(watch, (kept = { generation, rows: 0, byKey: new Map() }))
    const answer = kept.byKey.get(key) as R[] | undefined
    if (answer) return answer
    const rows = await read()
    for (const row of rows) Object.freeze(row)
    Object.freeze(rows)
    // Kept only if no other call has seen a newer generation meanwhile.
    if (this.byDb.get(watch) === kept && rows.length <= ROWS_KEPT) {
      if (kept.rows + rows.length > ROWS_KEPT) [kept.byKey, kept.rows] = [new Map(), 0]
      kept.byKey.set(key, rows)
      kept.rows += rows.length
    }
    return rows
  }
}
