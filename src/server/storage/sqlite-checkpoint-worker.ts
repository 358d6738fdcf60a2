/** The worker thread of sqlite-checkpointer.ts: passive WAL checkpoints on a connection of its own. */
import { parentPort, workerData } from 'node:worker_threads'
import { DatabaseSync } from '@photostructure/sqlite'

const { file, intervalMs } = workerData as { file: string; intervalMs: number }
const db = new DatabaseSync(file)
db.exec('PRAGMA busy_timeout = 5000')
const timer = setInterval(() => db.exec('PRAGMA wal_checkpoint(PASSIVE)'), intervalMs)
parentPort!.on('message', (message) => {
  if (message !== 'stop') return
  clearInterval(timer)
  db.close()
  parentPort!.close()
})
