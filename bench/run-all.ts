/**
 * `npm run bench [FILTER…]`: runs every compiled benchmark (dist/bench/*.bench.js) whose name contains one
 * of the filters (all when none), each in its own process so one cannot disturb the next, and prints one table.
 * `--json` prints the rows as JSON instead.
 */
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { BenchRow, BenchRun } from './harness.js'

const here = dirname(fileURLToPath(import.meta.url))

interface Outcome {
  bench: string
  rows: BenchRow[]
  error?: string
}

/** Child mode: run one benchmark file and print its rows as JSON on the last line. */
async function runOne(file: string): Promise<void> {
  const module = (await import(pathToFileURL(file).href)) as { run?: BenchRun }
  if (typeof module.run !== 'function') throw new Error(`${basename(file)} does not export run()`)
  const rows = await module.run()
  // Exit once the rows are out: a private PostgreSQL (src/testkit/postgres.ts) is a child process that would
  // otherwise keep this one alive, and the parent waits for the exit.
  process.stdout.write('\n' + JSON.stringify(rows) + '\n', () => process.exit(0))
}

function runChild(file: string): Promise<Outcome> {
  const bench = basename(file, '.bench.js')
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--one', file], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.on('exit', (code) => {
      const last = out.trim().split('\n').at(-1) ?? ''
      try {
        if (code !== 0) throw new Error(`exited with ${code}`)
        resolve({ bench, rows: JSON.parse(last) as BenchRow[] })
      } catch (err) {
        resolve({ bench, rows: [], error: (err as Error).message })
      }
    })
  })
}

function formatValue(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2)
}

function table(outcomes: Outcome[]): string {
  const header = ['bench', 'figure', 'value', 'unit', 'target', 'note']
  const lines = outcomes.flatMap((o) =>
    o.error ? [[o.bench, 'FAILED', '', '', '', o.error]] : o.rows.map((r) => [o.bench, r.figure, formatValue(r.value), r.unit, r.target ?? '', r.note ?? '']),
  )
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`
  return [row(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(row)].join('\n')
}

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  if (args[0] === '--one') return runOne(args[1])
  const json = args.includes('--json')
  const filters = args.filter((a) => a !== '--json')
  const files = readdirSync(here)
    .filter((f) => f.endsWith('.bench.js'))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort()
    .map((f) => join(here, f))
  if (files.length === 0) {
    process.stderr.write(`no benchmark matched ${filters.join(' ')}\n`)
    process.exit(1)
  }
  const outcomes: Outcome[] = []
  for (const file of files) {
    process.stderr.write(`running ${basename(file)}…\n`)
    outcomes.push(await runChild(file))
  }
  process.stdout.write((json ? JSON.stringify(outcomes, null, 2) : table(outcomes)) + '\n')
  if (outcomes.some((o) => o.error)) process.exit(1)
}

await main()
