/**
 * Live migration between two QEMU hosts without shared storage (docs/qemu.md, "Operations"), in QEMU 7.2's way:
 *
 * 1. destination (`prepare`): a QEMU with identical devices started paused with `-incoming defer`, its disks fresh
 *    overlays on the same base image, exported writable over NBD; `migrate-incoming` listens on a TCP port.
 * 2. source (`send`): each disk is `blockdev-mirror`ed into its NBD export (root: only the overlay's own data,
 *    `sync: top`, the base image being on both hosts; ephemeral and swap in full), and once every mirror is ready
 *    the memory goes with `migrate`; when it completes the mirrors are cancelled (the targets stay consistent
 *    copies), and the source QEMU quits.
 * 3. destination (`finish`): the NBD server stops and the guest continues. It never rebooted.
 *
 * Any failure before the end leaves the guest running on the source (`rollback`); the destination is destroyed.
 * While `send` runs, an `OutgoingMigration` lets a second command act on it through the same monitor connection
 * (QEMU serves one per monitor): cancel (`migrate_cancel`, the mirrors cancelled, the guest runs on here) or
 * force-complete (`stop`: the paused guest's memory no longer changes, so the copy converges; the destination's
 * `finish` continues it there).
 * Migration and NBD traffic go host to host on the addresses the control plane knows (data, not control
 * connections); they are not encrypted yet (QEMU's tls-creds would do it).
 */
import { createServer } from 'node:net'
import { DriverError } from '../../../contracts/host/compute-driver.js'
import type { QmpClient } from './qmp.js'

/** Where the source sends a guest: what the destination prepared. */
export interface IncomingMigration {
  address: string
  nbdPort: number
  migrationPort: number
  /** Block nodes exported (and so mirrored), with the mirror mode each needs. */
  disks: { node: string; sync: 'top' | 'full' }[]
}

/** A TCP port free on `address` right now (the kernel picks; the caller binds it at once). */
export function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, address, () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

/** QEMU's own max-bandwidth for migration streams (128 MiB/s). */
const DEFAULT_MAX_BANDWIDTH = 128 * 1024 * 1024

/** A live migration this host is sending: what a cancel or a force-complete acts on while sendGuest runs. */
export class OutgoingMigration {
  cancelled = false
  forced = false
  /** Rejects once cancelled, so that sendGuest's waits end at once. */
  readonly whenCancelled: Promise<never>
  private rejectCancelled!: (err: Error) => void

  constructor(
    readonly q: QmpClient,
    /** Tests: the memory stream's cap in bytes per second (QMP max-bandwidth), so that a copy lasts a while. */
    readonly maxBandwidth?: number,
  ) {
    this.whenCancelled = new Promise<never>((_resolve, reject) => (this.rejectCancelled = reject))
    this.whenCancelled.catch(() => {})
  }

  /** Stops the copy: sendGuest's own clean-up then cancels the migration and the mirrors and continues the guest. */
  async cancel(): Promise<void> {
    this.cancelled = true
    this.rejectCancelled(new DriverError('live migration cancelled'))
    await this.q.execute('migrate_cancel').catch(() => {})
  }

  /** Pauses the guest: its memory no longer changes, so the copy converges (the destination continues it). */
  async forceComplete(): Promise<void> {
    this.forced = true
    await this.q.execute('stop')
    // A test's cap on the stream goes too (QEMU's default again), or the paused guest's copy would crawl on.
    if (this.maxBandwidth) await this.q.execute('migrate-set-parameters', { 'max-bandwidth': DEFAULT_MAX_BANDWIDTH })
  }
}

/** Destination: exports the disks and starts listening for the migration stream. */
export async function listenForGuest(q: QmpClient, address: string, nodes: string[]): Promise<IncomingMigration> {
  const nbdPort = await freePort(address)
  await q.execute('nbd-server-start', { addr: { type: 'inet', data: { host: address, port: String(nbdPort) } } })
  for (const node of nodes) await q.execute('block-export-add', { type: 'nbd', id: `incoming-${node}`, 'node-name': node, name: node, writable: true })
  await q.execute('migrate-set-capabilities', { capabilities: [{ capability: 'events', state: true }] })
  const migrationPort = await freePort(address)
  await q.execute('migrate-incoming', { uri: `tcp:${address}:${migrationPort}` })
  return { address, nbdPort, migrationPort, disks: nodes.map((node) => ({ node, sync: node === 'root' ? 'top' : 'full' })) }
}

/** Source: mirrors the disks, then the memory; resolves once the guest runs on nothing but the destination. */
export async function sendGuest(q: QmpClient, target: IncomingMigration, timeoutMs: number, control?: OutgoingMigration): Promise<void> {
  const cancelled = control?.whenCancelled ?? new Promise<never>(() => {})
  const jobs: string[] = []
  const nodes: string[] = []
  try {
    for (const d of target.disks) {
      const node = `outgoing-${d.node}`
      await q.execute('blockdev-add', { driver: 'nbd', 'node-name': node, server: { type: 'inet', host: target.address, port: String(target.nbdPort) }, export: d.node })
      nodes.push(node)
      const since = q.events.length
      await q.execute('blockdev-mirror', { 'job-id': node, device: d.node, target: node, sync: d.sync })
      jobs.push(node)
      const ready = await Promise.race([
        q.waitEvent('BLOCK_JOB_READY', timeoutMs, { since, match: (e) => e.data?.device === node }),
        q.waitEvent('BLOCK_JOB_COMPLETED', timeoutMs, { since, match: (e) => e.data?.device === node }),
        cancelled,
      ])
      if (ready.event === 'BLOCK_JOB_COMPLETED') throw new DriverError(`copying disk ${d.node} to the destination failed: ${String(ready.data?.error ?? 'the job ended early')}`)
    }
    await q.execute('migrate-set-capabilities', { capabilities: [{ capability: 'events', state: true }] })
    // A test's cap, unless a force-complete came while the disks were mirrored (it lifts the cap).
    if (control?.maxBandwidth && !control.forced) await q.execute('migrate-set-parameters', { 'max-bandwidth': control.maxBandwidth })
    if (control?.cancelled) throw new DriverError('live migration cancelled')
    await q.execute('migrate', { uri: `tcp:${target.address}:${target.migrationPort}` })
    await Promise.race([migrationDone(q, timeoutMs), cancelled])
  } catch (err) {
    await q.execute('migrate_cancel').catch(() => {})
    await stopJobs(q, jobs, nodes)
    // A source paused by a failed migration's last phase runs on.
    const status = await q.execute<{ status: string }>('query-status').catch(() => undefined)
    if (status && status.status !== 'running') await q.execute('cont').catch(() => {})
    throw err
  }
  // The memory arrived: the mirrors stop without switching over (the targets hold everything), the source leaves.
  await stopJobs(q, jobs, nodes)
}

async function stopJobs(q: QmpClient, jobs: string[], nodes: string[]): Promise<void> {
  for (const job of jobs) {
    const since = q.events.length
    // Without force: a ready mirror first writes what is still dirty, then ends; the target is a complete copy.
    const cancelled = await q.execute('block-job-cancel', { device: job }).then(
      () => true,
      () => false,
    )
    if (cancelled) await Promise.race([q.waitEvent('BLOCK_JOB_CANCELLED', 30_000, { since, match: (e) => e.data?.device === job }), q.waitEvent('BLOCK_JOB_COMPLETED', 30_000, { since, match: (e) => e.data?.device === job })]).catch(() => {})
  }
  for (const node of nodes) await q.execute('blockdev-del', { 'node-name': node }).catch(() => {})
}

/** Destination, after the source finished: no more NBD, and the guest runs. */
export async function startArrivedGuest(q: QmpClient): Promise<void> {
  await q.execute('nbd-server-stop').catch(() => {})
  await migrationDone(q, 60_000)
  await q.execute('cont')
}

/** Waits for a migration (to a file, from a file, or to another host) to complete; its error otherwise. */
export async function migrationDone(q: QmpClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const info = await q.execute<{ status?: string; 'error-desc'?: string }>('query-migrate')
    if (info.status === 'completed') return
    if (info.status === 'failed' || info.status === 'cancelled') throw new DriverError(`migration ${info.status}: ${info['error-desc'] ?? 'no reason given'}`)
    if (Date.now() > deadline) throw new DriverError(`migration did not complete within ${Math.round(timeoutMs / 1000)} s (${info.status})`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
