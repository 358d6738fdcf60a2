/**
 * The `storage` role of pcc-agent: the host holds volumes with the same backends the control plane uses (file
 * under `<root>/var/lib/pcc/volumes`, LVM in volume group `cinder-volumes` where it exists) and exports attached
 * ones over NBD with qemu-storage-daemon (runtime files under `<root>/run/pcc/volumes`).
 *
 * - Applying the role checks the backends, reports them (`PUT …/storage`: export address, capacity) and serves
 *   the exports the control plane wants; the report is repeated every minute (capacity for the scheduler).
 * - `volume.*` commands are the control plane's StoragePlace calls (src/server/volume/places/agent-place.ts).
 * - `volume.sync_exports` reads the desired exports (`GET …/storage/exports`, keys included) and converges;
 *   the daemons outlive an agent restart and are adopted by the next sync.
 * - Removing the role stops every export (the control plane marks the host's volumes `error`).
 */
import { createReadStream, createWriteStream } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { HostStream } from '../agent/compute-driver.js'
import { type VolumeBackend } from './backend.js'
import { VolumeBackendError } from '../../contracts/host/volume.js'
import { ExportManager } from './exports/export-manager.js'
import { exportSpecOf } from './exports/qsd-command.js'
import { FileBackend } from './file/file-backend.js'
import { DEFAULT_VOLUME_GROUP, LvmBackend } from './lvm/lvm-backend.js'
import { convertToFile, removeDeadScratch, withScratchDir } from './qemu-img.js'
import { DriverError } from '../../contracts/host/compute-driver.js'
import { BACKEND_FAILURE, type PlaceSource, type WantedExport } from '../../contracts/host/storage-place.js'
import { sourceAddressTowards } from '../agent/source-address.js'
import type { CommandHandlers, CommandName, StorageCommandName } from '../../contracts/host/commands.js'

/** agent.json `storage`: where exports listen (default: the address this host reaches the control plane from). */
export interface StorageConfig {
  export_address?: string
  volume_group?: string
}

export interface StorageRoleOptions {
  root: string
  controller: string
  config: StorageConfig
  /** A JSON call to `{base}/resmgr/v1/hosts/{id}{path}` with the host credential. */
  api: <T>(method: string, path: string, body?: unknown) => Promise<T>
  /** A streaming call to `{base}/resmgr/v1/hosts/{id}{path}` (image bytes). */
  host: HostStream
  log: (level: string, message: string, fields?: Record<string, unknown>) => void
}

const REPORT_EVERY_MS = 60_000

/** The commands the storage role executes (the others are the compute driver's). */
export function isStorageCommand(name: CommandName): name is StorageCommandName {
  return name.startsWith('volume.')
}

export class StorageRole {
  private backends = new Map<string, VolumeBackend>()
  private readonly exports: ExportManager
  private address = ''
  private active = false
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly options: StorageRoleOptions) {
    this.exports = new ExportManager(join(options.root, 'run/pcc/volumes'))
  }

  /** Follows the role's state from the heartbeat answer; reports the outcome of applying and removing. */
  async converge(state: string | undefined): Promise<void> {
    if (state === 'applying') {
      try {
        await this.start()
        await this.options.api('PUT', '/roles/storage/status', { state: 'ok' })
      } catch (err) {
        this.options.log('error', 'storage role failed', { error: (err as Error).message })
        await this.options.api('PUT', '/roles/storage/status', { state: 'failed', message: (err as Error).message })
      }
    } else if (state === 'removing') {
      await this.stop()
      await this.options.api('PUT', '/roles/storage/status', { state: 'removed' })
    } else if (state === 'ok' && !this.active) {
      // A restarted agent: take its exports back.
      await this.start()
    } else if (state === undefined && this.active) {
      await this.stop()
    }
  }

  /** Finds the usable backends (file always; LVM when its volume group works), reports them, serves exports. */
  async start(): Promise<void> {
    const file = new FileBackend(join(this.options.root, 'var/lib/pcc/volumes'))
    await file.check()
    await removeDeadScratch(file.dir)
    const backends = new Map<string, VolumeBackend>([['file', file]])
    const lvm = new LvmBackend(this.options.config.volume_group ?? DEFAULT_VOLUME_GROUP)
    await lvm.check().then(
      () => backends.set('lvm', lvm),
      (err: Error) => this.options.log('info', 'LVM backend not available on this host', { reason: err.message }),
    )
    this.backends = backends
    this.address = this.options.config.export_address ?? (await sourceAddressTowards(this.options.controller))
    await this.report()
    // Active before the first sync, whose exports name the backends (a restarted agent adopts its daemons there).
    this.active = true
    try {
      await this.syncExports()
    } catch (err) {
      this.active = false
      throw err
    }
    // Every minute: capacity for the scheduler, and the exports checked against the desired state (a daemon that
    // died is started again).
    this.timer ??= setInterval(
      () => void this.report().then(() => this.syncExports()).catch((err: Error) => this.options.log('warn', 'storage report or export check failed', { error: err.message })),
      REPORT_EVERY_MS,
    )
    this.timer.unref()
    this.options.log('info', 'storage role active', { backends: [...backends.keys()], exportAddress: this.address })
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    this.active = false
    await this.exports.stopAll()
  }

  private async report(): Promise<void> {
    const backends: Record<string, { total_gb: number; free_gb: number }> = {}
    for (const [name, backend] of this.backends) {
      const cap = await backend.capacity()
      backends[name] = { total_gb: cap.totalGb, free_gb: cap.freeGb }
    }
    await this.options.api('PUT', '/storage', { export_address: this.address, backends })
  }

  private backend(name: unknown): VolumeBackend {
    // Not applied yet, or being removed: the control plane tries again later.
    if (!this.active) throw new DriverError('the storage role is not active on this host', 409)
    // A backend the host does not have is final, like any other failure of its backends.
    const backend = this.backends.get(String(name))
    if (!backend) throw new VolumeBackendError(`the ${String(name)} backend is not available on this host`)
    return backend
  }

  /** The `volume.*` commands. Backend failures reach the control plane as errors with their message. */
  readonly handlers: CommandHandlers<StorageCommandName> = {
    'volume.create': ({ backend, volumeId, sizeGb }) => this.backendCall(backend, (b) => b.create(volumeId, sizeGb)),
    'volume.create_from': ({ backend, volumeId, sizeGb, source }) => this.backendCall(backend, (b) => this.createFrom(b, volumeId, sizeGb, source)),
    'volume.extend': ({ backend, volumeId, sizeGb }) => this.backendCall(backend, (b) => b.extend(volumeId, sizeGb)),
    'volume.delete': ({ backend, volumeId }) => this.backendCall(backend, (b) => b.delete(volumeId)),
    'volume.snapshot_create': ({ backend, snapshotId, volumeId }) => this.backendCall(backend, (b) => b.createSnapshot(snapshotId, volumeId, this.exports.liveCopyOf({ kind: 'volume', volumeId }))),
    'volume.snapshot_delete': ({ backend, snapshotId, volumeId }) => this.backendCall(backend, (b) => b.deleteSnapshot(snapshotId, volumeId)),
    'volume.upload_image': ({ backend, volumeId, imageId, diskFormat }) => this.backendCall(backend, (b) => this.upload(b, volumeId, imageId, diskFormat === 'qcow2' ? 'qcow2' : 'raw')),
    'volume.sync_exports': async () => ({ address: await this.syncExports() }),
  }

  /** Runs `work` with the named backend; the control plane tells backend failures (final) from others (retried) by their code. */
  private async backendCall<T>(name: string, work: (backend: VolumeBackend) => Promise<T>): Promise<T> {
    try {
      return await work(this.backend(name))
    } catch (err) {
      if (err instanceof VolumeBackendError) throw new DriverError(err.message, BACKEND_FAILURE)
      throw err
    }
  }

  private async createFrom(backend: VolumeBackend, volumeId: string, sizeGb: number, source: PlaceSource): Promise<void> {
    if (source.kind !== 'image') return backend.createFrom(volumeId, sizeGb, source, this.exports.liveCopyOf(source))
    if (await backend.createFromImage?.(volumeId, sizeGb, { id: source.imageId, format: source.format })) return
    await withScratchDir(join(this.options.root, 'var/lib/pcc/volumes'), async (dir) => {
      const path = join(dir, 'image')
      await pipeline(await this.options.host('GET', `/storage/volumes/${volumeId}/image`), createWriteStream(path, { mode: 0o600 }))
      await backend.createFrom(volumeId, sizeGb, { kind: 'image', path, format: source.format })
    })
  }

  private async upload(backend: VolumeBackend, volumeId: string, imageId: string, format: 'raw' | 'qcow2'): Promise<void> {
    await withScratchDir(join(this.options.root, 'var/lib/pcc/volumes'), async (dir) => {
      const path = join(dir, `image.${format}`)
      await convertToFile(backend.blockdev({ volumeId }), path, format)
      const answer = await this.options.host('PUT', `/storage/images/${imageId}`, createReadStream(path))
      await pipeline(answer, new Writable({ write: (_chunk, _enc, done) => done() }))
    })
  }

  private async syncExports(): Promise<string> {
    const answer = await this.options.api<{ exports: { volume_id: string; snapshot_of?: string | null; backend: string; port: number; generations: number[]; keys: WantedExport['keys'] }[] }>('GET', '/storage/exports')
    const wanted = answer.exports.map((e): WantedExport => ({ volumeId: e.volume_id, ...(e.snapshot_of ? { snapshotOf: e.snapshot_of } : {}), backend: e.backend, port: e.port, generations: e.generations, keys: e.keys }))
    await this.exports.converge(wanted.map((w) => exportSpecOf(w, (ref) => this.backend(w.backend).blockdev(ref), this.address)))
    return this.address
  }
}
