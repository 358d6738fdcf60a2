/** Helpers the benchmarks share: spawning a pcc-server or a bare node:http server, and waiting for readiness. */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'

export const SERVER_MAIN = fileURLToPath(new URL('../src/server/main.js', import.meta.url))

export interface Spawned {
  child: ChildProcess
  url: string
  stop(): Promise<void>
}

function env(extra: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('PCC_') && value !== undefined) base[name] = value
  return { ...base, ...extra }
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGTERM')
    })
}

/** Reads the first line matching `pattern` from the child's stdout. */
function lineMatching(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    const timer = setTimeout(() => reject(new Error(`no match for ${pattern} within ${timeoutMs} ms: ${err}`)), timeoutMs)
    child.stderr?.on('data', (d: Buffer) => (err += d))
    const onData = (d: Buffer) => {
      out += d
      const match = pattern.exec(out)
      if (match) {
        // Stop reading here: matching every later log line against all output so far would load the machine.
        child.stdout!.off('data', onData)
        clearTimeout(timer)
        resolve(match)
      }
    }
    child.stdout!.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`process exited (${code}) early: ${err}`))
    })
  })
}

/**
 * Starts `pcc-server` with the given settings; resolves once it prints its address. BENCH_SERVER_NODE_ARGS adds
 * Node flags to it (e.g. `--cpu-prof`).
 */
export async function spawnPcc(settings: Record<string, string>): Promise<Spawned> {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const child = spawn(process.execPath, [...nodeArgs, SERVER_MAIN], { env: env({ PCC_LISTEN: '127.0.0.1:0', ...settings }), stdio: ['ignore', 'pipe', 'pipe'] })
  const match = await lineMatching(child, /listening on (\S+?),/, 60_000)
  // Keep draining stdout so request logs never block the server on a full pipe.
  child.stdout!.resume()
  return { child, url: match[1], stop: stopper(child) }
}

/** The baseline: node:http answering every request with a small JSON body, in its own process. */
export async function spawnBareHttp(): Promise<Spawned> {
  const source = `
    const http = require('node:http')
    const server = http.createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end('{"status":"ok"}') })
    server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port + ','))
    process.on('SIGTERM', () => server.close(() => process.exit(0)))
  `
  const child = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  const match = await lineMatching(child, /listening on (\S+?),/, 10_000)
  return { child, url: match[1], stop: stopper(child) }
}

/** Milliseconds from `since` until GET url/readyz answers 200. */
export async function untilReady(url: string, since: number, timeoutMs = 60_000): Promise<number> {
  for (;;) {
    const status = await fetch(`${url}/readyz`).then((r) => r.status, () => 0)
    if (status === 200) return Date.now() - since
    if (Date.now() - since > timeoutMs) throw new Error(`not ready within ${timeoutMs} ms`)
    await sleep(10)
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * The ceiling for a route: node:http in this process answering every request with `body` (captured from pcc's
 * own answer), nothing else. Measured like pcc, it shows what the machine and the body's size alone allow.
 */
export async function bareBodyServer(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
