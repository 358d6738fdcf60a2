/**
 * Runs the NBD exports of one storage place (the control plane's machine, or one storage host) as desired
 * state: `converge(desired)` starts the qemu-storage-daemon of every exported volume that has none, updates
 * key files and generations of those that run, and stops the daemons of volumes no longer exported. The same
 * code runs in pcc-server and in pcc-agent.
 *
 * Daemons are detached from the process that starts them, so a restart of pcc-server or pcc-agent never cuts
 * a guest's disk; the next `converge` (at start, from the store's truth) adopts them by their pid file — a
 * daemon counts as running only if /proc/<pid>/cmdline is a qemu-storage-daemon with that very pid file, which
 * guards against a reused pid. Files of a volume's daemon live in `<runDir>/<volume id>/` (qsd-command.ts).
 *
 * Calls are serialised: two attachments of one volume converging at once would otherwise start two daemons.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { openSync, closeSync, readFileSync } from 'node:fs'
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { privateDirAsync } from '../../private-dir.js'
import { join } from 'node:path'
import { VolumeBackendError, type BlockdevSpec, type ByteSource, type LiveCopy } from '../../../contracts/host/volume.js'
import { signal, waitGone } from '../../compute/qemu/qemu-process.js'
import { QmpClient } from '../../compute/qemu/qmp.js'
import { daemonFiles, exportArgs, keyFile, nodeName, qsdArgs, type ExportSpec } from './qsd-command.js'

const START_TIMEOUT_MS = 15_000
const STOP_TIMEOUT_MS = 10_000
/** How long a port stays taken by a daemon that was just killed, at most. */
const PORT_RELEASE_MS = 5_000
const BACKUP_TIMEOUT_MS = 3_600_000

/** What converge remembers of a running daemon (spec.json): everything but the keys. */
type DaemonState = Omit<ExportSpec, 'keys'>

export class ExportManager {
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    readonly runDir: string,
    /** How long a daemon may take to serve its exports before it is given up (and killed). */
    private readonly startTimeoutMs = START_TIMEOUT_MS,
  ) {}

  /** Makes the running exports of this place exactly `desired`. */
  converge(desired: ExportSpec[]): Promise<void> {
    return this.serially(async () => {
      const wanted = new Map(desired.filter((s) => s.keys.length > 0).map((s) => [s.volumeId, s]))
      for (const spec of wanted.values()) await this.ensure(spec)
      for (const volumeId of await this.known()) if (!wanted.has(volumeId)) await this.stop(volumeId)
    })
  }

  /** Stops every daemon of this place (tests, decommissioning); the volumes' bytes are untouched. */
  stopAll(): Promise<void> {
    return this.serially(async () => {
      for (const volumeId of await this.known()) await this.stop(volumeId)
    })
  }

  /**
   * A point-in-time copy of an exported volume into `target` (an existing node of the volume's size), made by its
   * daemon with `blockdev-backup` (full): what the guest writes after the job starts does not reach the copy.
   * False when no daemon serves the volume here.
   */
  backup(volumeId: string, target: BlockdevSpec): Promise<boolean> {
    return this.serially(async () => {
      const files = daemonFiles(join(this.runDir, volumeId))
      const state = await readState(files.spec)
      if (daemonPid(files.pid) === undefined || !state) return false
      const qmp = await QmpClient.connect(files.qmp)
      try {
        await qmp.execute('blockdev-add', { ...target, 'node-name': 'snapshot-target' })
        try {
          const since = qmp.events.length
          await qmp.execute('blockdev-backup', { 'job-id': 'snapshot', device: nodeName(state.generations[state.generations.length - 1]), target: 'snapshot-target', sync: 'full' })
          const done = await qmp.waitEvent('BLOCK_JOB_COMPLETED', BACKUP_TIMEOUT_MS, { since, match: (e) => e.data?.device === 'snapshot' })
          if (done.data?.error) throw new VolumeBackendError(`copying volume ${volumeId} failed: ${String(done.data.error)}`)
        } finally {
          await qmp.execute('blockdev-del', { 'node-name': 'snapshot-target' }).catch(() => {})
        }
      } finally {
        qmp.close()
      }
      return true
    })
  }

  /** How a copy of `source` is made through its daemon while it is exported (for volumes; `backup`). */
  liveCopyOf(source: ByteSource): LiveCopy | undefined {
    return source.kind === 'volume' ? (target) => this.backup(source.volumeId, target) : undefined
  }

  /** Volumes whose daemon runs now. */
  async running(): Promise<string[]> {
    const ids = await this.known()
    return ids.filter((id) => daemonPid(daemonFiles(join(this.runDir, id)).pid) !== undefined)
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work)
    this.queue = next.catch(() => {})
    return next
  }

  private async known(): Promise<string[]> {
    try {
      return (await readdir(this.runDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)
    } catch {
      return []
    }
  }

  private async ensure(spec: ExportSpec): Promise<void> {
    const dir = join(this.runDir, spec.volumeId)
    const files = daemonFiles(dir)
    await privateDirAsync(dir)
    await writeIfChanged(files.keys, keyFile(spec.keys))
    const { keys: _keys, ...state } = spec
    const previous = await readState(files.spec)
    const pid = daemonPid(files.pid)
    const sameDaemon = previous && previous.address === state.address && previous.port === state.port && JSON.stringify(previous.blockdev) === JSON.stringify(state.blockdev)
    if (pid !== undefined && sameDaemon) {
      await this.changeGenerations(files.qmp, spec, previous.generations)
    } else {
      if (pid !== undefined) await terminate(pid)
      await start(spec, dir, this.startTimeoutMs)
    }
    await writeIfChanged(files.spec, JSON.stringify(state))
  }

  /** Adds the generations the daemon lacks and removes those no longer wanted, through its monitor. */
  private async changeGenerations(qmpPath: string, spec: ExportSpec, running: number[]): Promise<void> {
    const add = spec.generations.filter((g) => !running.includes(g))
    const drop = running.filter((g) => !spec.generations.includes(g))
    if (add.length === 0 && drop.length === 0) return
    const qmp = await QmpClient.connect(qmpPath)
    try {
      for (const g of add) {
        await qmp.execute('blockdev-add', { ...spec.blockdev, 'node-name': nodeName(g) })
        await qmp.execute('block-export-add', exportArgs(spec.volumeId, g, spec.readOnly))
      }
      for (const g of drop) {
        // Hard: the hypervisor has moved to the newer generation; a connection still open is a stale one.
        const since = qmp.events.length
        await qmp.execute('block-export-del', { id: `e${g}`, mode: 'hard' })
        await qmp.waitEvent('BLOCK_EXPORT_DELETED', 10_000, { since, match: (e) => e.data?.id === `e${g}` })
        await qmp.execute('blockdev-del', { 'node-name': nodeName(g) })
      }
    } finally {
      qmp.close()
    }
  }

  private async stop(volumeId: string): Promise<void> {
    const dir = join(this.runDir, volumeId)
    const pid = daemonPid(daemonFiles(dir).pid)
    if (pid !== undefined) await terminate(pid)
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Starts the daemon and waits for its pid file, which it writes once every export exists. One that has not by
 * `timeoutMs` is killed: still opening its image (where it does not even heed SIGTERM), it would otherwise hold
 * the export's port for ever, and every later start would fail on it.
 */
async function start(spec: ExportSpec, dir: string, timeoutMs: number): Promise<void> {
  const files = daemonFiles(dir)
  await rm(files.pid, { force: true })
  await rm(files.qmp, { force: true })
  const listener = await listenNoDelay(spec)
  const log = openSync(files.log, 'a', 0o600)
  let exited: string | undefined
  let child: ChildProcess
  try {
    child = spawn('qemu-storage-daemon', qsdArgs(spec, dir), { detached: true, stdio: ['ignore', log, log, listener.fd] })
    child.on('error', (err) => (exited = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'qemu-storage-daemon is not installed' : err.message))
    child.on('exit', (code, signal) => (exited ??= `it exited (${signal ?? `code ${code}`})`))
    child.unref()
  } finally {
    closeSync(log)
    // The daemon holds its own copy of the socket; ours goes.
    listener.close()
  }
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (exited) break
    if (daemonPid(files.pid) !== undefined) return
    await sleep(20)
  }
  const why = exited ?? 'no pid file in time'
  if (!exited && child.pid !== undefined) {
    signal(child.pid, 'SIGKILL')
    await waitGone(child.pid, STOP_TIMEOUT_MS)
  }
  const tail = (await readFile(files.log, 'utf8').catch(() => '')).trim().split('\n').slice(-3).join(' ')
  throw new VolumeBackendError(`the NBD export of volume ${spec.volumeId} on ${spec.address}:${spec.port} did not start: ${why}${tail ? `: ${tail}` : ''}`)
}

/**
 * The export's listening socket with TCP_NODELAY set, which every accepted connection inherits on Linux. Node
 * sets it only through the handle of a listening server (`_handle.setNoDelay`), there being no public way.
 * The port is this export's own: EADDRINUSE is tried again for a few seconds, because a daemon that was just killed
 * holds it until its last thread has gone, after its pid no longer names it.
 */
async function listenNoDelay(spec: ExportSpec): Promise<{ fd: number; close(): void }> {
  const deadline = Date.now() + PORT_RELEASE_MS
  for (;;) {
    const server = createServer()
    const failure = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      server.once('error', resolve)
      server.listen({ host: spec.address, port: spec.port, exclusive: true }, () => resolve(undefined))
    })
    if (!failure) {
      const handle = (server as unknown as { _handle: { fd: number; setNoDelay(on: boolean): void } })._handle
      handle.setNoDelay(true)
      return { fd: handle.fd, close: () => server.close() }
    }
    if (failure.code !== 'EADDRINUSE' || Date.now() > deadline) {
      throw new VolumeBackendError(`the NBD export of volume ${spec.volumeId} cannot listen on ${spec.address}:${spec.port}: ${failure.code ?? failure.message}`)
    }
    await sleep(100)
  }
}

/** The pid of the daemon that owns `pidFile`, if it runs. */
export function daemonPid(pidFile: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim())
  } catch {
    return undefined
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return argv[0]?.endsWith('qemu-storage-daemon') && argv.includes(pidFile) ? pid : undefined
  } catch {
    return undefined
  }
}

/** SIGTERM (the daemon flushes and closes its images), then SIGKILL if it has not gone within the timeout. */
async function terminate(pid: number): Promise<void> {
  signal(pid, 'SIGTERM')
  if (await waitGone(pid, STOP_TIMEOUT_MS)) return
  signal(pid, 'SIGKILL')
  await waitGone(pid, STOP_TIMEOUT_MS)
}

async function readState(path: string): Promise<DaemonState | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as DaemonState
  } catch {
    return undefined
  }
}

/** Replaces a small file atomically (a reader never sees half a key file), and only when its content changes. */
async function writeIfChanged(path: string, content: string): Promise<void> {
  if ((await readFile(path, 'utf8').catch(() => undefined)) === content) return
  await writeFile(`${path}.tmp`, content, { mode: 0o600 })
  await rename(`${path}.tmp`, path)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
