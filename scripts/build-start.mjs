#!/usr/bin/env node
// What `npm start` compiles: the server, agent and CLI (src/, without the web console) into dist/src, file by file
// with esbuild — the same JavaScript tsc emits (ESM, ES2022 class fields, verbatim imports: esbuild reads
// tsconfig.json), without type checking, which `npm run typecheck` and `npm run build` (tsc over src, test, bench,
// conformance) do. On a 2-core machine tsc takes 30–50 s and esbuild under a second: the first start of a fresh
// clone waits for this (docs/benchmarks.md, "Fresh clone to a guest's console"). The pcctl and agent bundles and
// the web console are built after it as `npm run build` builds them.
//
// A start whose build is newer than every input skips it (a restart is then immediate, not 20 s of building
// under load); two starts from one checkout at once build one after the other, the second finding the first's
// output up to date.
import { execFileSync } from 'node:child_process'
import { closeSync, cpSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { build } from 'esbuild'

const STAMP = 'dist/.start-build'
const LOCK = 'dist/.start-build.lock'
// What the build reads besides src/: a change to any of these makes the output stale too.
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts/build-start.mjs', 'scripts/build-release.mjs', 'scripts/build-web.mjs']

function sources(dir, wanted = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts')) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return path === join('src', 'web') ? [] : sources(path, wanted)
    return wanted(entry.name) ? [path] : []
  })
}

/** Every file under dir, the web console's included. */
function allFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? allFiles(path) : [path]
  })
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs
  } catch {
    return undefined
  }
}

/** True when the last complete build is newer than every source and build input. */
function upToDate() {
  const built = mtime(STAMP)
  if (built === undefined) return false
  return [...allFiles('src'), ...BUILD_INPUTS].every((path) => (mtime(path) ?? 0) < built)
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/** Takes the checkout's build lock, waiting while another live start holds it; a dead holder's lock is taken over. */
async function lock() {
  mkdirSync('dist', { recursive: true })
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'))
      writeFileSync(LOCK, String(process.pid))
      return
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
    }
    const holder = Number(readFileSync(LOCK, 'utf8').trim() || 0)
    // An empty file is a holder between its create and its write: wait for it.
    if (holder > 0 && !pidAlive(holder)) rmSync(LOCK, { force: true })
    else await sleep(200)
  }
}

async function compile() {
  // tsc's incremental state would take these files for its own: the next `npm run build` emits everything again.
  rmSync('dist/.tsbuildinfo', { force: true })
  await build({
    entryPoints: sources('src'),
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Node 20.10+ reads `with { type: 'json' }`; esbuild would drop it for node20.
    supported: { 'import-attributes': true },
    sourcemap: true,
    logLevel: 'warning',
  })
  // JSON the code imports (Glance's metadef namespaces) stays a file beside it, as tsc emits it.
  for (const file of sources('src', (name) => name.endsWith('.json'))) {
    mkdirSync(dirname(join('dist', file)), { recursive: true })
    cpSync(file, join('dist', file))
  }
  for (const script of ['scripts/build-release.mjs', 'scripts/build-web.mjs']) execFileSync(process.execPath, [script], { stdio: 'inherit' })
}

await lock()
try {
  if (!upToDate()) {
    // The stamp's time is the build's start: a source saved during the build makes the next start build again.
    rmSync(STAMP, { force: true })
    const started = new Date()
    await compile()
    writeFileSync(STAMP, `${started.toISOString()}\n`)
    utimesSync(STAMP, started, started)
  }
} finally {
  rmSync(LOCK, { force: true })
}
