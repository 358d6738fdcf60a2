/**
 * The contract of a benchmark: every `bench/*.bench.ts` exports `run()` returning rows of one table.
 * `npm run bench` (bench/run-all.ts) runs each file in turn and prints the rows together. Benchmarks target
 * servers on 127.0.0.1 only and bound their own duration.
 */
export interface BenchRow {
  /** What was measured, e.g. "GET /healthz, concurrency 8". */
  figure: string
  value: number
  /** e.g. "req/s", "ms p50", "s". */
  unit: string
  /** The issue's target, e.g. ">= 15000 req/s". */
  target?: string
  note?: string
}

export type BenchRun = () => Promise<BenchRow[]>
