/**
 * The project's mark: from a fresh clone to a real guest's console in the browser, on one machine, in under three
 * minutes including the install. What a user does, timed phase by phase:
 *
 * 1. `git clone` of this repository (its committed HEAD) into a scratch directory;
 * 2. `npm install` there, as README says, with npm's cache as it is on this machine (the row says how warm);
 * 3. `PCC_LOCAL_HYPERVISOR=qemu npm start` (README's line for real guests on one machine): its build, then the
 *    server's first start up to the admin password it prints. The guest image is built at this first start, as on
 *    a machine that never built it (an empty `XDG_CACHE_HOME`);
 * 4. `pcctl server create --image pcc-busybox-x86_64 --flavor m1.tiny --wait` with the printed credentials;
 * 5. Chromium: log in to the web console, open the server, its Console tab, until the guest's own output (a
 *    `pcc-guest:` line or its login prompt) is on screen. The browser is started before the clock (a user's is
 *    already open).
 *
 * The server, pcctl and Chromium run inside a network namespace of their own (netns.ts), so README's
 * 127.0.0.1:8080 is free whatever else runs here and the all-in-one data plane touches nothing of the machine.
 * Everything is stopped and removed afterwards: the guest, the server, the namespace, the clone. About 3 minutes.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchBrowser, type TestBrowser } from '../src/testkit/browser.js'
import { createTestNetwork, type TestNetwork } from '../src/testkit/netns.js'
import { killQemusUnder, realGuestsMissing } from '../src/testkit/qemu.js'
import type { BenchRow, BenchRun } from './harness.js'

const TARGET_S = 180
const SERVER_NAME = 'quickstart-1'
/** The guest's own words on its serial console: its init's lines or its login prompt. */
const GUEST_OUTPUT = /pcc-guest: .*|\S+ login:/
/** The end of its boot: the guest image's root shell on the console (`name:/# `), or a login prompt. */
const PROMPT = new RegExp(`${SERVER_NAME}(?: login:|:\\S*#)`)

/** The repository cloned: this checkout, or BENCH_QUICKSTART_REPO. */
const REPO = process.env.BENCH_QUICKSTART_REPO ?? fileURLToPath(new URL('../..', import.meta.url))

/** A user's shell: none of this process's PCC_* settings nor the npm_* variables `npm run bench` adds. */
function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('PCC_') || /^npm_/i.test(name) || name === 'INIT_CWD') continue
    env[name] = value
  }
  return { ...env, ...extra }
}

/** Runs a command to its end (its whole process group killed after `timeoutMs`): its stdout. */
function runToEnd(command: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command.slice(1), { cwd: options.cwd, env: options.env ?? userEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let out = ''
    let err = ''
    child.stdout!.on('data', (d: Buffer) => (out += d))
    child.stderr!.on('data', (d: Buffer) => (err += d))
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), options.timeoutMs)
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(out)
      else reject(new Error(`${command.join(' ')} ended with ${code ?? signal}: ${(err || out).trim().split('\n').slice(-5).join(' / ')}`))
    })
  })
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // already gone
  }
}

/** How many of the lock file's packages npm's cache holds (by content, as cacache stores it). */
function npmCacheWarmth(clone: string): { held: number; packages: number } {
  const lock = JSON.parse(readFileSync(join(clone, 'package-lock.json'), 'utf8')) as { packages: Record<string, { integrity?: string; optional?: boolean }> }
  const cache = join(process.env.npm_config_cache ?? join(homedir(), '.npm'), '_cacache/content-v2/sha512')
  let held = 0
  let packages = 0
  for (const [path, pkg] of Object.entries(lock.packages)) {
    const sha = /^sha512-(\S+)/.exec(pkg.integrity ?? '')
    // Optional packages for other platforms are never fetched here: they say nothing about the cache.
    if (!path || !sha || pkg.optional) continue
    packages++
    const hex = Buffer.from(sha[1], 'base64').toString('hex')
    if (existsSync(join(cache, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4)))) held++
  }
  return { held, packages }
}

/**
 * How long node-gyp took for a native module built from source: from its configuration (config.gypi) to the
 * linked module; undefined when a prebuilt binary was used (no build/config.gypi).
 */
function sourceCompileMs(build: string): number | undefined {
  const config = join(build, 'config.gypi')
  if (!existsSync(config)) return undefined
  const linked = readdirSync(join(build, 'Release')).filter((f) => f.endsWith('.node'))
  return Math.max(...linked.map((f) => statSync(join(build, 'Release', f)).mtimeMs)) - statSync(config).mtimeMs
}

/** The newest modification time under `dir` (ms since the epoch). */
function newestMtime(dir: string): number {
  let newest = 0
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const st = statSync(path)
    newest = Math.max(newest, st.isDirectory() ? newestMtime(path) : st.mtimeMs)
  }
  return newest
}

/** `npm start` in the namespace; resolves with what its first start prints once the admin password is out. */
function startServer(clone: string, namespace: string, env: Record<string, string>): { child: ChildProcess; output: () => string; ready: Promise<{ url: string; password: string; at: number }> } {
  const child = spawn('nsenter', [`--net=/run/netns/${namespace}`, '--', 'npm', 'start'], { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let out = ''
  let err = ''
  child.stderr!.on('data', (d: Buffer) => (err += d))
  const ready = new Promise<{ url: string; password: string; at: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no admin password printed within 600 s: ${err.slice(-2000)}`)), 600_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d
      const url = /pcc is running at (\S+)/.exec(out)
      const password = /export OS_PASSWORD=(\S+)/.exec(out)
      if (url && password) {
        clearTimeout(timer)
        resolve({ url: url[1], password: password[1], at: Date.now() })
      }
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`npm start ended (${code ?? signal}) before it was ready: ${err.slice(-2000) || out.slice(-2000)}`))
    })
  })
  ready.catch(() => {})
  return { child, output: () => out, ready }
}

function exited(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

/** Processes whose command line names a file under `dir` (the data plane's dnsmasq, should one outlive the agent). */
function killProcessesUnder(dir: string): void {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (Number(pid) !== process.pid && readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`${dir}/`)) process.kill(Number(pid), 'SIGKILL')
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * The agent's network namespaces are bind mounts under the data dir (`host/run/netns`) and outlive it: unmounted
 * here, deepest first, so the scratch directory can go and no namespace stays behind.
 */
function unmountUnder(dir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point) => point?.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length)
  for (const point of mounts) execFileSync('umount', ['--lazy', point])
}

/** Where the local hypervisor puts its sockets when the data dir's path is too long (local-hypervisor.ts). */
function longPathRunDir(hostRoot: string): string {
  return `/run/pcc-${createHash('sha256').update(hostRoot).digest('hex').slice(0, 12)}`
}

export const run: BenchRun = async () => {
  const missing = realGuestsMissing() ?? (process.getuid?.() !== 0 ? 'not root (the server runs in a network namespace of its own)' : undefined)
  if (missing) throw new Error(`cannot run real guests here: ${missing}`)
  const commit = execFileSync('git', ['-C', REPO, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  const dirty = execFileSync('git', ['-C', REPO, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== ''
  const load = loadavg()[0]
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-quickstart-'))
  const clone = join(work, 'pcc')
  const hostRoot = join(clone, 'data/host')
  let net: TestNetwork | undefined
  let browser: TestBrowser | undefined
  let server: ReturnType<typeof startServer> | undefined
  let credentials: Record<string, string> | undefined
  const pcctl = (args: string[], timeoutMs: number) =>
    runToEnd(['nsenter', `--net=/run/netns/${net!.hosts[0].namespace}`, '--', process.execPath, join(clone, 'dist/release/pcctl.mjs'), ...args], { cwd: clone, env: userEnv({ ...credentials, PCCTL_TOKEN_CACHE: 'off' }), timeoutMs })
  try {
    net = createTestNetwork(1)
    if (net.sharedBecause) throw new Error(`no network namespace: ${net.sharedBecause}`)
    const namespace = net.hosts[0].namespace!
    const wrapper = join(work, 'chromium-in-namespace')
    writeFileSync(wrapper, `#!/bin/sh\nexec nsenter --net=/run/netns/${namespace} -- /usr/bin/chromium "$@"\n`)
    chmodSync(wrapper, 0o755)
    browser = await launchBrowser({ executablePath: wrapper })

    const t0 = Date.now()
    await runToEnd(['git', 'clone', '--quiet', REPO, clone], { timeoutMs: 120_000 })
    const cloned = Date.now()

    const warmth = npmCacheWarmth(clone)
    await runToEnd(['npm', 'install'], { cwd: clone, timeoutMs: 900_000 })
    const installed = Date.now()
    // Only where the binding has no binary inside its package for this platform (linux x64/arm64 have one).
    const compileMs = sourceCompileMs(join(clone, 'node_modules/@photostructure/sqlite/build'))

    server = startServer(clone, namespace, userEnv({ PCC_LOCAL_HYPERVISOR: 'qemu', XDG_CACHE_HOME: join(work, 'cache') }))
    const ready = await server.ready
    const built = newestMtime(join(clone, 'dist/web'))
    credentials = {}
    for (const m of server.output().matchAll(/(OS_[A-Z_]+)=(\S+)/g)) credentials[m[1]] = m[2]

    const created = JSON.parse(await pcctl(['server', 'create', '--image', 'pcc-busybox-x86_64', '--flavor', 'm1.tiny', '--wait', '-f', 'json', SERVER_NAME], 600_000)) as { id: string; status: string }
    if (created.status !== 'ACTIVE') throw new Error(`the server is ${created.status}, not ACTIVE`)
    const active = Date.now()

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    await page.goto(`${ready.url}/`)
    await page.getByLabel('User name').fill('admin')
    await page.getByLabel('Password').fill(ready.password)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Servers', exact: true }).click()
    await page.getByRole('link', { name: SERVER_NAME }).click()
    await page.getByRole('tab', { name: 'Console' }).click()
    const terminal = page.locator('.xterm-rows')
    const screenShows = async (pattern: RegExp, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const text = (await terminal.innerText().catch(() => '')).replace(/\u00a0/g, ' ')
        const match = pattern.exec(text)
        if (match) return { line: match[0], at: Date.now() }
        if (Date.now() > deadline) throw new Error(`${pattern} not on the serial console page within ${timeoutMs} ms: ${JSON.stringify(text.slice(-300))}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    }
    const first = await screenShows(GUEST_OUTPUT, 180_000)
    const prompt = await screenShows(PROMPT, 120_000)
    await context.close()

    const accelFile = join(hostRoot, 'var/lib/pcc/accelerator.json')
    const accel = existsSync(accelFile) ? String((JSON.parse(readFileSync(accelFile, 'utf8')) as { choice?: { accel?: string } }).choice?.accel ?? '?').toUpperCase() : '?'
    const s = (ms: number) => Number((ms / 1000).toFixed(1))
    return [
      { figure: 'clone: git clone of the repository', value: s(cloned - t0), unit: 's', note: `${commit}${dirty ? ' (uncommitted changes of the checkout are not in it)' : ''}` },
      { figure: 'install: npm install', value: s(installed - cloned), unit: 's', note: `npm cache ${warmth.held === warmth.packages ? 'warm' : warmth.held === 0 ? 'cold' : 'partly warm'} (${warmth.held}/${warmth.packages} packages in it)${compileMs === undefined ? '' : `; of it ${s(compileMs)} s compiling the SQLite binding from source (its package has no binary for this platform)`}` },
      { figure: 'build: PCC_LOCAL_HYPERVISOR=qemu npm start, its build', value: s(built - installed), unit: 's' },
      { figure: 'start to ready: first start up to the printed admin password', value: s(ready.at - built), unit: 's', note: 'migrations, bootstrap, guest image built (empty cache), local agent started' },
      { figure: 'server ACTIVE: pcctl server create --wait', value: s(active - ready.at), unit: 's', note: `pcc-busybox-x86_64, m1.tiny, ${accel}` },
      { figure: 'console showing the guest: log in, server page, Console tab', value: s(first.at - active), unit: 's', note: `"${first.line.trim()}" on screen, its shell prompt ${s(prompt.at - first.at)} s later (Chromium already running)` },
      { figure: 'total: fresh clone → guest on the console in the browser', value: s(first.at - t0), unit: 's', target: `< ${TARGET_S} s`, note: `2 cores; load ${load.toFixed(2)} (1-min average) at the start` },
    ] satisfies BenchRow[]
  } finally {
    await browser?.close()
    if (server && credentials) await pcctl(['server', 'delete', '--wait', SERVER_NAME], 120_000).catch(() => {})
    if (server) {
      killGroup(server.child, 'SIGTERM')
      if (!(await exited(server.child, 30_000))) killGroup(server.child, 'SIGKILL')
    }
    await killQemusUnder(hostRoot)
    killProcessesUnder(work)
    unmountUnder(work)
    net?.close()
    rmSync(longPathRunDir(hostRoot), { recursive: true, force: true })
    rmSync(work, { recursive: true, force: true })
  }
}
