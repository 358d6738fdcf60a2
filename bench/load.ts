/**
 * A closed-loop HTTP load run (N connections, each sending its next request when the answer arrives) for the
 * throughput figures. With `wrk` installed (Debian package `wrk`) the load comes from wrk in its own process:
 * a client written in C, as a real client would run elsewhere. autocannon, a JavaScript client, spends about as
 * much CPU reading an answer as the server spends making a small one, and on a 2-core machine that CPU is taken
 * from the server: with the same server, wrk measured 17 % more validations per second (mean of five alternating
 * runs). Without wrk it falls back to autocannon in a worker thread and says so in `generator`.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'

export interface LoadSpec {
  url: string
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  connections: number
  durationS: number
}

export interface LoadResult {
  /** 2xx answers per second. */
  rps: number
  /** Answers that were not 2xx, plus socket errors and timeouts. */
  errors: number
  p50Ms: number
  /** How the load was made, for the row's note. */
  generator: string
}

function installed(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' })
    return true
  } catch (err) {
    // wrk prints its version and exits 1; only a missing binary is ENOENT.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

/** Looked up once per process: every figure of a bench uses the same generator. */
let generator: 'wrk' | 'autocannon' | undefined
function loadGenerator(): 'wrk' | 'autocannon' {
  return (generator ??= installed('wrk') ? 'wrk' : 'autocannon')
}

/** "512.00us", "1.20ms", "2.00s" → milliseconds. */
export function wrkDurationMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text)
  if (!match) throw new Error(`unexpected wrk duration "${text}"`)
  const value = Number(match[1])
  return { us: value / 1000, ms: value, s: value * 1000, m: value * 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm']
}

/** The figures of wrk's `--latency` report. */
export function parseWrk(output: string): { requests: number; seconds: number; non2xx: number; socketErrors: number; p50Ms: number } {
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m),/.exec(output)
  const p50 = /^\s+50%\s+(\S+)$/m.exec(output)
  if (!total || !p50) throw new Error(`unexpected wrk output:\n${output}`)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  return {
    requests: Number(total[1]),
    seconds: wrkDurationMs(total[2] + total[3]) / 1000,
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    socketErrors: socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
    p50Ms: wrkDurationMs(p50[1]),
  }
}

/** wrk takes the method and body from a Lua script; a long bracket level the body cannot close keeps it literal. */
function wrkScript(spec: LoadSpec): string {
  let level = '='
  while (spec.body?.includes(`]${level}]`)) level += '='
  return [`wrk.method = "${spec.method ?? 'GET'}"`, spec.body === undefined ? '' : `wrk.body = [${level}[${spec.body}]${level}]`].join('\n')
}

async function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-bench-wrk-'))
  const script = join(dir, 'request.lua')
  writeFileSync(script, wrkScript(spec))
  const headers = Object.entries(spec.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationS}s`, '--latency', '-s', script, ...headers, spec.url]
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d))
      child.stderr.on('data', (d: Buffer) => (out += d))
      child.on('error', reject)
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited with ${code}: ${out}`))))
    })
    const r = parseWrk(output)
    return { rps: (r.requests - r.non2xx) / r.seconds, errors: r.non2xx + r.socketErrors, p50Ms: r.p50Ms, generator: 'wrk, 1 thread' }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url,
    method: spec.method ?? 'GET',
    connections: spec.connections,
    duration: spec.durationS,
    workers: 1,
    headers: spec.headers,
    body: spec.body,
  })
  return { rps: result['2xx'] / spec.durationS, errors: result.non2xx + result.errors + result.timeouts, p50Ms: result.latency.p50, generator: 'autocannon in a worker thread (wrk not installed)' }
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return loadGenerator() === 'wrk' ? runWrk(spec) : runAutocannon(spec)
}
