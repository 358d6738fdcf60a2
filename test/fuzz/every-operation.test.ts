/**
 * The fuzz suite over every operation of /openapi.json (src/testkit/fuzz/), bounded for CI: a fixed seed and
 * a few cases per operation (spread over its lanes: valid input from the caller it is for first, then another
 * caller's, then malformed input), on SQLite and PostgreSQL. Every answer is a 4xx in the service's
 * own error shape or a documented 2xx, never a 5xx or a hang; a refused request changes nothing; another
 * project's resources are invisible. `npm run fuzz` runs the same properties for as long as you like.
 *
 * PCC_FUZZ_SEED and PCC_FUZZ_RUNS change the seed and the cases per operation (a failure prints the seed to
 * replay it with).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import { openApiOperations, type OpenApiDocument } from '../../src/testkit/openapi.js'
import { fuzzOperation, newChecker, type OperationResult } from '../../src/testkit/fuzz/run.js'
import { startWorld, type World } from '../../src/testkit/fuzz/world.js'

const SEED = Number(process.env.PCC_FUZZ_SEED ?? 20261126)
/** Cases per operation and dialect: each of an operation's lanes (five at most) once on SQLite, the first three on PostgreSQL. */
const RUNS: Record<string, number> = { sqlite: Number(process.env.PCC_FUZZ_RUNS ?? 5), postgres: Number(process.env.PCC_FUZZ_RUNS ?? 3) }

for (const dialect of DIALECTS) {
  describe(`fuzzing every operation (${dialect})`, () => {
    let world: World
    let doc: OpenApiDocument
    before(async () => {
      world = await startWorld(dialect)
      doc = (await (await fetch(`${world.server.url}/openapi.json`)).json()) as OpenApiDocument
    })
    after(() => world?.close())

    it(`no 5xx, no hang, 4xx in the family's shape, refused requests change nothing, other projects invisible (seed ${SEED})`, async (t) => {
      const checker = newChecker(world, doc)
      const operations = openApiOperations(doc).filter((op) => op.method !== 'HEAD')
      const results: OperationResult[] = []
      // What each operation cost (its cases and the repairs after them), so the suite's time can be kept in check.
      const spent: [string, number][] = []
      for (const op of operations) {
        const started = performance.now()
        results.push(await fuzzOperation(checker, op, { seed: SEED, runsPerOperation: RUNS[dialect] }))
        spent.push([`${op.method} ${op.path}`, performance.now() - started])
      }
      const slowest = spent.sort((a, b) => b[1] - a[1]).slice(0, 10)
      t.diagnostic(`slowest operations: ${slowest.map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s`).join('; ')}`)
      const failures = results.filter((r) => r.failure)
      const report = failures.map((f) => `${f.operation}: ${f.failure}\nreplay: npm run fuzz -- --seed ${SEED} --runs ${RUNS[dialect]} --only '${f.operation}' --dialect ${dialect}`)
      assert.equal(failures.length, 0, `${failures.length} of ${results.length} operations failed:\n\n${report.join('\n\n')}`)
      assert.equal(results.length, operations.length)
      const short = results.filter((r) => r.runs !== RUNS[dialect]).map((r) => `${r.operation}: ${r.runs} of ${RUNS[dialect]} cases`)
      assert.deepEqual(short, [], 'every operation ran every case')
    })
  })
}
