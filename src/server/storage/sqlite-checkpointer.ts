/**
 * WAL checkpoints for the SQLite store, off the event loop. SQLite's automatic checkpoint runs inside the
 * commit that crosses the threshold, and a checkpoint copies pages into the database file and fsyncs it: a
 * quarter of a server create's cost when it ran on the main thread (docs/benchmarks.md). Here the main
 * connection has automatic checkpoints off, and a worker thread with a connection of its own runs passive
 * checkpoints (they never block the main connection's reads or writes) a few times a second. If the worker
 * fails, the main connection takes automatic checkpoints back, so the WAL can never grow without bound.
 */
import { Worker } from 'node:worker_threads'
import type { DatabaseSyncInstance } from '@photostructure/sqlite'

/** SQLite's own default threshold, in pages, restored when the worker is gone. */
const AUTOCHECKPOINT_PAGES = 1000
export const CHECKPOINT_INTERVAL_MS = 250

export interface Checkpointer {
  stop(): Promise<void>
}

export function startCheckpointer(raw: DatabaseSyncInstance, file: string, onError: (err: Error) => void): Checkpointer {
  raw.exec('PRAGMA wal_autocheckpoint = 0')
  const worker = new Worker(new URL('./sqlite-checkpoint-worker.js', import.meta.url), { workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS } })
  worker.unref()
  let stopping = false
  const fallBack = (err: Error) => {
    if (stopping) return
    stopping = true
    if (raw.isOpen) raw.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
    onError(err)
  }
  worker.on('error', fallBack)
  worker.on('exit', (code) => fallBack(new Error(`the SQLite checkpoint worker exited with code ${code}`)))
  return {
    async stop() {
      if (stopping) return
      stopping = true
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      // Unreferenced while it runs (it must not keep a finished process alive); waited for now.
      worker.ref()
      worker.postMessage('stop')
      await exited
    },
  }
}
