/**
 * A storage host as a storage place: each operation is a `volume.*` command on the host's durable command channel,
 * executed by its pcc-agent with its own backends (src/host/storage/), like the compute driver's calls. Image
 * bytes travel through the resource manager's host endpoints (the agent downloads a volume's source image and
 * uploads an image made from a volume); exports are synced by the agent from its desired state, which it reads
 * from `{base}/resmgr/v1/hosts/{id}/storage/exports` (keys never ride in a command's arguments, except a copy's
 * short-lived key, which the channel clears once the command is answered).
 *
 * Backups and restores need no command of their own: the control plane reads or writes the volume's bytes over
 * NBD, through an export to a key of the backup's own (backup-worker.ts, `ControllerPlace.withRawCopy`/`writeRaw`).
 */
import type { AgentDriver, CallOptions } from '../../hosts/agent-driver.js'
import type { CommandArgs, CommandResult, StorageCommandName } from '../../../contracts/host/commands.js'
import { DriverError } from '../../../contracts/host/compute-driver.js'
import { VolumeBackendError, type BackendCapacity } from '../../../contracts/host/volume.js'
import { BACKEND_FAILURE, type PlaceSource, type StoragePlace } from '../../../contracts/host/storage-place.js'

/** Copies and conversions may take long: an hour before the control plane gives up waiting. */
const COPY_TIMEOUT_MS = 3_600_000

export class AgentPlace implements StoragePlace {
  constructor(
    readonly location: string,
    /** The host's agent, or undefined when the host is not registered (any more). */
    private readonly agent: () => AgentDriver | undefined,
    /** Records where the host serves its exports (it may change with the host's network). */
    private readonly reportAddress: (address: string) => Promise<void>,
    /** The backends' capacity the host's agent last reported (it reports with every storage heartbeat). */
    private readonly reported: () => Promise<Record<string, { total_gb: number; free_gb: number }> | undefined>,
  ) {}

  async capacity(backend: string): Promise<BackendCapacity> {
    const offer = (await this.reported())?.[backend]
    if (!offer) throw new VolumeBackendError(`storage host ${this.location} reports no ${backend} backend`)
    return { totalGb: offer.total_gb, freeGb: offer.free_gb }
  }

  private async call<C extends StorageCommandName>(op: C, args: CommandArgs<C>, options: CallOptions = {}): Promise<CommandResult<C>> {
    const agent = this.agent()
    if (!agent) throw new DriverError(`Storage host ${this.location} is not registered.`)
    try {
      return await agent.call(op, args, options)
    } catch (err) {
      // The agent marks its backends' failures 422: final, unlike a host that does not answer (retried).
      if (err instanceof DriverError && err.code === BACKEND_FAILURE) throw new VolumeBackendError(err.message)
      throw err
    }
  }

  async create(backend: string, volumeId: string, sizeGb: number): Promise<void> {
    await this.call('volume.create', { backend, volumeId, sizeGb })
  }

  async createFrom(backend: string, volumeId: string, sizeGb: number, source: PlaceSource): Promise<void> {
    // An NBD source's key stays out of the dedupe key, which is stored in clear.
    await this.call('volume.create_from', { backend, volumeId, sizeGb, source }, { dedupeKey: `volume.create_from:${volumeId}`, timeoutMs: COPY_TIMEOUT_MS })
  }

  async extend(backend: string, volumeId: string, sizeGb: number): Promise<void> {
    await this.call('volume.extend', { backend, volumeId, sizeGb })
  }

  async delete(backend: string, volumeId: string): Promise<void> {
    await this.call('volume.delete', { backend, volumeId }, { timeoutMs: COPY_TIMEOUT_MS })
  }

  async createSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void> {
    await this.call('volume.snapshot_create', { backend, snapshotId, volumeId }, { timeoutMs: COPY_TIMEOUT_MS })
  }

  async deleteSnapshot(backend: string, snapshotId: string, volumeId: string): Promise<void> {
    await this.call('volume.snapshot_delete', { backend, snapshotId, volumeId })
  }

  async uploadToImage(backend: string, volumeId: string, imageId: string, diskFormat: 'raw' | 'qcow2'): Promise<void> {
    await this.call('volume.upload_image', { backend, volumeId, imageId, diskFormat }, { timeoutMs: COPY_TIMEOUT_MS })
  }

  async syncExports(): Promise<string> {
    const { address } = await this.call('volume.sync_exports', {}, { dedupeKey: `volume.sync_exports:${Date.now()}` })
    await this.reportAddress(address)
    return address
  }
}
