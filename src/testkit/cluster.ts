/**
 * Several real pcc-server processes (`node dist/src/server/main.js`) on one fresh PostgreSQL database: the
 * high-availability deployment, for tests and benchmarks. Every process gets its own data dir and free port,
 * the same PCC_MASTER_KEY and the same public URL (a load balancer's, in production), and its stdout/stderr
 * go to a log file kept for debugging (`logFile`; printed by `describe()`).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Db } from '../server/storage/store.js'
import { ADMIN_PASSWORD, freePort } from './harness.js'
import { freshDatabase } from './postgres.js'

const MAIN = fileURLToPath(new URL('../server/main.js', import.meta.url))

export interface ClusterOptions {
  /** Number of processes (default 3). */
  size?: number
  /** Settings for every process (PCC_*), on top of the cluster defaults. */
  env?: Record<string, string>
  /** Per-process settings, by index. */
  envFor?: (index: number) => Record<string, string>
  /** An existing database instead of a fresh one. */
  databaseUrl?: string
  /** `sqlite`: one process on a SQLite file in its data dir (the embedded default, for comparisons). */
  dialect?: 'postgres' | 'sqlite'
  /** How long to wait for each process's /readyz (default 60 s). */
  readyTimeoutMs?: number
}

export interface ClusterNode {
  index: number
  url: string
  port: number
  dataDir: string
  logFile: string
  process: ChildProcess | undefined
  /** True while the process runs. */
  readonly alive: boolean
}

export interface Cluster {
  nodes: ClusterNode[]
  databaseUrl: string
  masterKey: string
  adminPassword: string
  /** The public URL every process advertises (the first node's address: stand-in for a load balancer). */
  publicUrl: string
  /** SIGKILL: the process dies at once, holding whatever leases it held. */
  kill(index: number): Promise<void>
  /** SIGTERM and wait for the graceful exit. */
  stop(index: number): Promise<void>
  /** Starts a stopped or killed node again on its port and data dir, and waits until it is ready. */
  restart(index: number): Promise<void>
  /** Stops every process and removes the data dirs (logs stay when `keepLogs`). */
  close(options?: { keepLogs?: boolean }): Promise<void>
  /** The last lines of each node's log, for assertion messages. */
  describe(lines?: number): string
}

async function waitReady(node: ClusterNode, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    if (!node.alive) throw new Error(`pcc-server ${node.index} exited before it was ready; log ${node.logFile}:\n${tail(node.logFile, 30)}`)
    try {
      const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(2000) })
      if (res.ok) return
      last = `${res.status} ${await res.text()}`
    } catch (err) {
      last = (err as Error).message
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`pcc-server ${node.index} not ready after ${timeoutMs} ms (${last}); log ${node.logFile}:\n${tail(node.logFile, 30)}`)
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const size = options.size ?? 3
  if (options.dialect === 'sqlite' && size !== 1) throw new Error('a SQLite store serves one process only')
  const databaseUrl = options.dialect === 'sqlite' ? '' : (options.databaseUrl ?? (await freshDatabase()))
  const masterKey = randomBytes(32).toString('base64')
  const root = mkdtempSync(join(tmpdir(), 'pcc-cluster-'))
  const ports: number[] = []
  for (let i = 0; i < size; i++) {
    let port = await freePort()
    while (ports.includes(port)) port = await freePort()
    ports.push(port)
  }
  const publicUrl = `http://127.0.0.1:${ports[0]}`
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000

  const nodes: (ClusterNode & { process: ChildProcess | undefined; exited: Promise<void> })[] = ports.map((port, index) => {
    const node = {
      index,
      port,
      url: `http://127.0.0.1:${port}`,
      dataDir: join(root, `node-${index}`),
      logFile: join(root, `node-${index}.log`),
      process: undefined as ChildProcess | undefined,
      exited: Promise.resolve(),
      get alive() {
        return node.process !== undefined && node.process.exitCode === null && node.process.signalCode === null
      },
    }
    return node
  })

  const launch = (index: number) => {
    const node = nodes[index]
    const log = createWriteStream(node.logFile, { flags: 'a' })
    const child = spawn(process.execPath, [MAIN], {
      env: {
        // The test runner's own PCC_* variables (PCC_TEST_PG_URL…) are not server settings: the server would refuse them.
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PCC_'))),
        PCC_LISTEN: `127.0.0.1:${node.port}`,
        PCC_PUBLIC_URL: publicUrl,
        PCC_DATA_DIR: node.dataDir,
        PCC_DATABASE_URL: databaseUrl,
        PCC_MASTER_KEY: masterKey,
        PCC_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PCC_LOG_LEVEL: process.env.PCC_TEST_LOG_LEVEL ?? 'warn',
        ...options.env,
        ...options.envFor?.(index),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout!.pipe(log, { end: false })
    child.stderr!.pipe(log, { end: false })
    node.process = child
    node.exited = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(
      () => new Promise<void>((resolve) => setTimeout(() => log.end(resolve), 50)),
    )
  }

  const cluster: Cluster = {
    nodes,
    databaseUrl,
    masterKey,
    adminPassword: ADMIN_PASSWORD,
    publicUrl,
    async kill(index) {
      const node = nodes[index]
      if (!node.alive) return
      node.process!.kill('SIGKILL')
      await node.exited
    },
    async stop(index) {
      const node = nodes[index]
      if (!node.alive) return
      node.process!.kill('SIGTERM')
      const timer = setTimeout(() => node.process?.kill('SIGKILL'), 20_000)
      await node.exited
      clearTimeout(timer)
    },
    async restart(index) {
      if (nodes[index].alive) await cluster.stop(index)
      launch(index)
      await waitReady(nodes[index], readyTimeoutMs)
    },
    async close(closeOptions = {}) {
      await Promise.all(nodes.map((_, i) => cluster.stop(i)))
      if (closeOptions.keepLogs) for (const node of nodes) rmSync(node.dataDir, { recursive: true, force: true })
      else rmSync(root, { recursive: true, force: true })
    },
    describe(lines = 20) {
      return nodes.map((n) => `--- node ${n.index} (${n.alive ? 'alive' : 'dead'}) ${n.logFile}\n${tail(n.logFile, lines)}`).join('\n')
    },
  }

  // All at once, as an operator's service manager would: migrations and bootstrap must cope with the race.
  for (let i = 0; i < size; i++) launch(i)
  try {
    await Promise.all(nodes.map((node) => waitReady(node, readyTimeoutMs)))
  } catch (err) {
    await cluster.close({ keepLogs: true }).catch(() => {})
    throw err
  }
  return cluster
}

/** Task owners are `host:pid:random`: the pid tells which process holds a task. */
export function ownerPid(owner: string | null): number | undefined {
  const pid = owner?.split(':')[1]
  return pid ? Number(pid) : undefined
}

/**
 * Samples, every `everyMs` until stopped, which process holds each running task of `kind`: the answer maps each
 * pid to the distinct tasks it was seen running. A finished task keeps no owner, so this is how a test sees
 * which processes did the work.
 */
export function watchTaskOwners(db: Db, kind: string, everyMs = 10): { stop(): Promise<Map<number, Set<string>>> } {
  const seen = new Map<number, Set<string>>()
  let watching = true
  const loop = (async () => {
    while (watching) {
      const rows = await db.selectFrom('tasks').select(['id', 'lease_owner']).where('status', '=', 'running').where('kind', '=', kind).execute()
      for (const row of rows) {
        const pid = ownerPid(row.lease_owner)
        if (pid === undefined) continue
        if (!seen.has(pid)) seen.set(pid, new Set())
        seen.get(pid)!.add(row.id)
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  })()
  return {
    async stop() {
      watching = false
      await loop
      return seen
    },
  }
}
