/**
 * `npm run fuzz -- [--seed N] [--duration 10m] [--runs 50] [--only 'GET /compute'] [--dialect sqlite|postgres]`:
 * the fuzz suite for longer than CI runs it. Rounds over every operation (each round with the next seed) until
 * the duration is spent; prints each failure as found, with what replays it, and exits 1 if there was any.
 */
import { parseArgs } from 'node:util'
import { openApiOperations, type OpenApiDocument } from '../openapi.js'
import { fuzzOperation, newChecker } from './run.js'
import { startWorld } from './world.js'

function duration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text)
  if (!m) throw new Error(`--duration: expected e.g. 90s, 10m or 2h, got ${text}`)
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: String(Date.now() % 1_000_000) },
      duration: { type: 'string', default: '10m' },
      runs: { type: 'string', default: '50' },
      only: { type: 'string' },
      dialect: { type: 'string', default: 'sqlite' },
    },
  })
  const seed = Number(values.seed)
  const deadline = Date.now() + duration(values.duration!)
  const dialect = values.dialect === 'postgres' ? 'postgres' : 'sqlite'
  const world = await startWorld(dialect)
  let failures = 0
  try {
    const doc = (await (await fetch(`${world.server.url}/openapi.json`)).json()) as OpenApiDocument
    const operations = openApiOperations(doc).filter((op) => op.method !== 'HEAD' && (!values.only || `${op.method} ${op.path}`.includes(values.only)))
    const checker = newChecker(world, doc)
    const accepted = new Set<string>()
    console.log(`fuzzing ${operations.length} operations on ${dialect}, seed ${seed}, ${values.runs} runs each per round, for ${values.duration}`)
    // The first round always covers every operation; later ones run while time is left.
    for (let round = 0; round === 0 || Date.now() < deadline; round++) {
      for (const op of operations) {
        if (round > 0 && Date.now() >= deadline) break
        const result = await fuzzOperation(checker, op, { seed: seed + round, runsPerOperation: Number(values.runs), timeLimitMs: 120_000 })
        if (Object.keys(result.statuses).some((status) => Number(status) < 300)) accepted.add(result.operation)
        if (!result.failure && result.runs < Number(values.runs)) console.log(`${result.operation}: ${result.runs} of ${values.runs} cases (stopped by the time limit)`)
        if (result.failure) {
          failures++
          console.log(`\nFAIL ${result.operation} (replay: npm run fuzz -- --seed ${seed + round} --runs ${values.runs} --only '${result.operation}' --dialect ${dialect})\n${result.failure}\n`)
        }
      }
      const never = operations.map((op) => `${op.method} ${op.path}`).filter((key) => !accepted.has(key))
      console.log(`round ${round} done (seed ${seed + round}), ${failures} failures so far; ${accepted.size} operations accepted some request, ${never.length} none yet:\n  ${never.join('\n  ')}`)
    }
  } finally {
    await world.close()
  }
  return failures === 0 ? 0 : 1
}

process.exitCode = await main()
