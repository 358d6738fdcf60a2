#!/usr/bin/env node
/**
 * Runs Tempest against a fresh pcc: `node dist/conformance/run.js <interop|ci|full|real-guests> [--service compute,image]
 * [--concurrency 2] [--only REGEX] [--keep] [--image debian-12 [--image-file FILE]]`. Starts pcc-server on a free port with its own data dir (for
 * real-guests: all-in-one with QEMU, in a network namespace of its own), prepares
 * what Tempest expects of an operator (conformance/pcc.ts), writes tempest.conf (conformance/tempest-conf.ts)
 * into a Tempest workspace in a temporary folder, runs the selection, prints the counts per service, every
 * failure and every skip with Tempest's reason, and exits 1 on any failure (for interop: of a required test).
 * Everything it started is stopped and the folder removed, also on failure or Ctrl-C (`--keep` keeps the folder:
 * the pcc and Tempest logs are in it). `--image` (real-guest selections only) makes a distribution's cloud image,
 * built by `pcctl image build`, Tempest's image_ref: the file (default: `<name>.qcow2` in the guest image cache,
 * where the Debian long lane keeps it) is uploaded with its recipe's properties, booted with flavors it fits in,
 * logged into as its user, with waits long enough for its boot under TCG.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AdminClient, hypervisorMissing, prepareCloud, startPcc, untilHypervisorUp, type DistroGuest, type RunningPcc } from './pcc.js'
import { defaultCacheDir } from '../src/guest-image/build.js'
import { DISTRO_IMAGES } from '../src/guest-image/debian.js'
import { featuresOff, renderIni, tempestOptions } from './tempest-conf.js'
import { hypervisorOf, interopTests, selection, SELECTIONS, SERVICES, type SelectionName, type Service } from './selections.js'
import { countByService, interopResults, outcome, readResults, skipReasons, type Counts, type TestResult } from './results.js'

const USAGE = `usage: run.js <${SELECTIONS.join('|')}> [--service ${SERVICES.join(',')}] [--concurrency N] [--only REGEX] [--keep] [--timeout-minutes N] [--image ${Object.keys(DISTRO_IMAGES).join('|')} [--image-file FILE]]`

interface Options {
  name: SelectionName
  services: Service[]
  concurrency: number
  only?: string
  keep: boolean
  timeoutMs: number
  distro?: DistroGuest
}

function parseOptions(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      service: { type: 'string' },
      concurrency: { type: 'string', default: '2' },
      only: { type: 'string' },
      keep: { type: 'boolean', default: false },
      'timeout-minutes': { type: 'string', default: '60' },
      image: { type: 'string' },
      'image-file': { type: 'string' },
    },
  })
  const name = positionals[0] as SelectionName
  if (positionals.length !== 1 || !SELECTIONS.includes(name)) throw new Error(USAGE)
  const services = (values.service?.split(',') ?? [...SERVICES]) as Service[]
  const unknown = services.filter((s) => !SERVICES.includes(s))
  if (unknown.length > 0) throw new Error(`unknown service ${unknown.join(', ')}\n${USAGE}`)
  const concurrency = Number(values.concurrency)
  const timeoutMinutes = Number(values['timeout-minutes'])
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be a positive integer\n${USAGE}`)
  if (!(timeoutMinutes > 0)) throw new Error(`--timeout-minutes must be positive\n${USAGE}`)
  return { name, services, concurrency, only: values.only, keep: values.keep, timeoutMs: timeoutMinutes * 60_000, distro: distroOption(name, values.image, values['image-file']) }
}

/** The distribution image `--image NAME [--image-file FILE]` names, checked before any cloud starts. */
function distroOption(name: SelectionName, image: string | undefined, file: string | undefined): DistroGuest | undefined {
  if (image === undefined) {
    if (file !== undefined) throw new Error(`--image-file needs --image\n${USAGE}`)
    return undefined
  }
  const recipe = DISTRO_IMAGES[image]
  if (!recipe) throw new Error(`--image: no image "${image}" (there is ${Object.keys(DISTRO_IMAGES).join(', ')})\n${USAGE}`)
  if (hypervisorOf(name) !== 'qemu') throw new Error(`--image needs a selection with real guests (real-guests, scenarios), not ${name}`)
  const path = file ?? join(defaultCacheDir(), `${recipe.name}.qcow2`)
  if (!existsSync(path)) throw new Error(`--image ${image}: ${path} does not exist; build it with  sudo pcctl image build ${recipe.name} --output ${path}`)
  return { recipe, file: path }
}

/** The tempest command, or why it cannot run (the reason a caller prints when it skips the conformance lane). */
function tempestMissing(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v tempest && command -v stestr'], { encoding: 'utf8' })
  return found.status === 0 ? undefined : 'the `tempest` command is not installed (Debian: apt-get install tempest python3-tempest)'
}

/** Runs `tempest run` in the workspace, in its own process group so that a timeout or Ctrl-C stops its workers too. */
function runTempest(workspace: string, args: string[], logFile: string, timeoutMs: number, signal: AbortSignal, where: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const command = [...where, 'sh', '-c', `exec tempest run ${args.map((a) => `'${a}'`).join(' ')} >'${logFile}' 2>&1`]
    const child = spawn(command[0], command.slice(1), { cwd: workspace, detached: true, stdio: 'ignore' })
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        /* already gone */
      }
    }
    const timer = setTimeout(() => {
      killGroup()
      reject(new Error(`tempest run did not finish within ${timeoutMs / 60_000} minutes`))
    }, timeoutMs)
    signal.addEventListener('abort', killGroup, { once: true })
    // Tempest exits non-zero when a test fails; the verdict comes from the results, not the code.
    child.once('exit', () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', killGroup)
      resolve()
    })
    child.once('error', reject)
  })
}

const pad = (s: string | number, n: number) => String(s).padEnd(n)

function printCounts(title: string, counts: Map<string, Counts>): void {
  console.log(`\n${title}`)
  console.log(`  ${pad('service', 10)} ${pad('passed', 7)} ${pad('failed', 7)} skipped`)
  const total: Counts = { passed: 0, failed: 0, skipped: 0 }
  for (const [service, c] of [...counts].sort()) {
    console.log(`  ${pad(service, 10)} ${pad(c.passed, 7)} ${pad(c.failed, 7)} ${c.skipped}`)
    total.passed += c.passed
    total.failed += c.failed
    total.skipped += c.skipped
  }
  console.log(`  ${pad('total', 10)} ${pad(total.passed, 7)} ${pad(total.failed, 7)} ${total.skipped}`)
}

function printSkips(title: string, results: { status: TestResult['status']; reason: string }[]): void {
  const reasons = skipReasons(results)
  if (reasons.length === 0) return
  console.log(`\n${title}`)
  for (const [reason, n] of reasons) console.log(`  ${pad(n, 4)} ${reason}`)
}

function printFailures(title: string, failures: { id: string; name?: string; status: string; reason: string }[]): void {
  if (failures.length === 0) return
  console.log(`\n${title}`)
  // The ✖ marks the lines scripts/run-tests.mjs repeats in its closing summary.
  for (const f of failures) console.log(`  ✖ ${f.name ?? f.id} [${f.status}]\n      ${f.reason}`)
}

/**
 * The server's own errors (5xx answers, error-level lines) under a failed run's report: the work dir and its log
 * are gone when CI shows the output, and a flaky failure may not come back.
 */
function printServerErrors(logFile: string): void {
  const errors = readFileSync(logFile, 'utf8').split('\n').map(logEntry).filter((e): e is LogEntry => e !== undefined && ((e.res?.statusCode ?? 0) >= 500 || (e.level ?? 0) >= 50))
  if (errors.length === 0) return
  // Indented under a ✖ line, so scripts/run-tests.mjs's closing summary repeats them.
  console.log(`\n  ✖ pcc-server logged ${errors.length} error(s) during the run${errors.length > 20 ? ' (the first 20)' : ''}:`)
  for (const e of errors.slice(0, 20)) {
    const line = `${new Date(e.time ?? 0).toISOString()} ${e.req ? `${e.req.method} ${e.req.url} → ${e.res?.statusCode} ` : ''}${e.err?.message ?? e.msg ?? ''}`
    console.log(`      ${line.length > 400 ? `${line.slice(0, 400)}…` : line}`)
  }
}

/** The fields of a pino line that say what went wrong. */
interface LogEntry { time?: number; level?: number; msg?: string; req?: { method?: string; url?: string }; res?: { statusCode?: number }; err?: { message?: string } }

function logEntry(line: string): LogEntry | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    return JSON.parse(line) as LogEntry
  } catch {
    return undefined // a line cut short when the server stopped
  }
}

/** Prints the report; returns whether the run passes. */
function report(options: Options, results: TestResult[]): boolean {
  const tests = results.filter((r) => !/^(setUpClass|tearDownClass) /.test(r.id))
  const classLevel = results.filter((r) => /^(setUpClass|tearDownClass) /.test(r.id) && r.status !== 'success')
  printCounts(`Tempest results by service (class-level set-up failures and skips count once per class):`, countByService([...tests, ...classLevel]))

  let passes = !results.some((r) => outcome(r.status) === 'failed')
  if ((options.name === 'interop' || options.name === 'ci') && !options.only) {
    const interop = interopResults(
      interopTests().filter((t) => options.services.some((s) => t.name.startsWith(`tempest.api.${s}.`))),
      results,
    )
    const required = interop.filter((t) => !t.flagged)
    const flagged = interop.filter((t) => t.flagged)
    const tally = (list: typeof interop) => ['passed', 'failed', 'skipped'].map((o) => `${list.filter((t) => outcome(t.status) === o).length} ${o}`).join(', ')
    console.log(`\nOpenStack Powered Compute 2020.06: required ${required.length} (${tally(required)}); flagged ${flagged.length} (${tally(flagged)})`)
    printSkips('Interop tests skipped (reason: count):', interop)
    printFailures('Flagged interop tests that failed (excused by the guideline):', flagged.filter((t) => outcome(t.status) === 'failed'))
    const requiredFailures = required.filter((t) => outcome(t.status) === 'failed')
    printFailures('Required interop tests that failed:', requiredFailures)
    if (options.name === 'interop') passes = requiredFailures.length === 0
    else passes = passes && requiredFailures.length === 0
  }
  printSkips('Skips (reason: count):', results)
  printFailures('Failures:', results.filter((r) => outcome(r.status) === 'failed'))
  console.log('\nFeatures pcc does not have (Tempest flags off):')
  for (const f of featuresOff(hypervisorOf(options.name))) console.log(`  [${f.section}] ${f.name}: ${f.missing}`)
  return passes
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2))
  const hypervisor = hypervisorOf(options.name)
  const missing = tempestMissing() ?? hypervisorMissing(hypervisor)
  if (missing) {
    console.error(`conformance: ${missing}`)
    return 2
  }
  const started = Date.now()
  const workDir = mkdtempSync(join(tmpdir(), 'pcc-tempest-'))
  const abort = new AbortController()
  let pcc: RunningPcc | undefined
  const cleanup = async () => {
    abort.abort()
    await pcc?.stop()
    if (!options.keep) rmSync(workDir, { recursive: true, force: true })
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void cleanup().finally(() => process.exit(130))
    })
  }
  try {
    pcc = await startPcc(workDir, hypervisor)
    const admin = await AdminClient.login(pcc.url)
    if (hypervisor === 'qemu') await untilHypervisorUp(admin)
    const cloud = await prepareCloud(admin, hypervisor, options.distro)
    const workspace = join(workDir, 'workspace')
    const init = spawnSync('tempest', ['init', '--workspace-path', join(workDir, 'workspace.yaml'), workspace], { encoding: 'utf8' })
    if (init.status !== 0) throw new Error(`tempest init: ${init.stderr}`)
    // Without it Tempest logs through tempest.conf's log_dir, one file all workers append to (its logging.conf
    // makes each worker truncate the same file).
    rmSync(join(workspace, 'etc', 'logging.conf'), { force: true })
    const config = join(workspace, 'etc', 'tempest.conf')
    writeFileSync(config, renderIni(tempestOptions(pcc.url, cloud, workspace, hypervisor)))

    const selected = options.only ? { include: [options.only], exclude: [] } : selection(options.name, options.services)
    const args = ['--config-file', config, '--concurrency', String(options.concurrency), '--include-list', join(workDir, 'include.txt')]
    writeFileSync(join(workDir, 'include.txt'), selected.include.join('\n') + '\n')
    if (selected.exclude.length > 0) {
      writeFileSync(join(workDir, 'exclude.txt'), selected.exclude.join('\n') + '\n')
      args.push('--exclude-list', join(workDir, 'exclude.txt'))
    }
    const what = options.only ? `--only ${options.only}` : `${options.name} (${options.services.join(', ')})`
    const guests = options.distro ? `all-in-one, real QEMU guests of ${options.distro.file}` : hypervisor === 'qemu' ? 'all-in-one, real QEMU guests' : 'simulated hosts'
    console.log(`Tempest ${what} against pcc at ${pcc.url} (${guests}), concurrency ${options.concurrency}`)
    await runTempest(workspace, args, join(workDir, 'tempest-run.log'), options.timeoutMs, abort.signal, pcc.tempestExec)
    const results = readResults(workspace)
    if (results.length === 0) throw new Error(`Tempest ran no test; its output is in ${join(workDir, 'tempest-run.log')} (use --keep)`)
    const passes = report(options, results)
    if (!passes) printServerErrors(pcc.logFile)
    console.log(`\n${passes ? 'PASSED' : 'FAILED'}: ${results.length} results in ${Math.round((Date.now() - started) / 1000)} s${options.keep ? `; logs in ${workDir}` : ''}`)
    return passes ? 0 : 1
  } finally {
    await cleanup()
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`conformance: ${err.message}`)
    process.exit(1)
  },
)
