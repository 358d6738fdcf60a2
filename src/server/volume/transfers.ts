/**
 * Volume transfers (Cinder's os-volume-transfer, and volume-transfers from 3.55): a project offers an available
 * volume; whoever holds the auth key shown once at creation accepts it into their own project, and the volume
 * (with its snapshots unless `no_snapshots`) changes hands, its quota usage with it. While offered the volume is
 * `awaiting-transfer`, which nothing else accepts. Only the key's salted SHA-256 is stored (docs/image-volume.md,
 * "Volume transfers").
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeTransferTable } from '../storage/schema.js'
import { checkQuota, typedDelta } from './quotas.js'
import { loadVolume } from './repo.js'
import { callerOf, type Caller } from './service.js'

export const AWAITING_TRANSFER = 'awaiting-transfer'

export interface TransferRecord {
  id: string
  volumeId: string
  /** The giving project. */
  projectId: string
  name: string | null
  noSnapshots: boolean
  createdAt: number
}

export interface CreatedTransfer extends TransferRecord {
  /** The secret the accepting project must present; answered once, never stored. */
  authKey: string
}

function rowToTransfer(row: VolumeTransferTable): TransferRecord {
  return { id: row.id, volumeId: row.volume_id, projectId: row.project_id, name: row.name, noSnapshots: row.no_snapshots === 1, createdAt: Number(row.created_at) }
}

const keyHash = (salt: string, key: string): string => createHash('sha256').update(salt).update(key).digest('hex')

function keyMatches(row: VolumeTransferTable, key: string): boolean {
  const given = Buffer.from(keyHash(row.salt, key), 'hex')
  const kept = Buffer.from(row.key_hash, 'hex')
  return given.length === kept.length && timingSafeEqual(given, kept)
}

export class VolumeTransferService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now
  }

  /** A transfer the caller may see (its volume's project's, or any for admins); 404 otherwise. */
  private async find(caller: Caller, id: string, db: Db = this.store.db): Promise<VolumeTransferTable> {
    const row = await db.selectFrom('volume_transfers').selectAll().where('id', '=', id).executeTakeFirst()
    if (!row || (caller.visibility !== 'all_projects' && row.project_id !== caller.projectId)) throw notFound(`Transfer ${id} could not be found.`)
    return row
  }

  async create(principal: Principal, input: { volumeId: string; name: string | null; noSnapshots: boolean }): Promise<CreatedTransfer> {
    const caller = callerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      const volume = await loadVolume(tx, input.volumeId)
      if (!volume || (caller.visibility !== 'all_projects' && volume.projectId !== caller.projectId)) throw notFound(`Volume ${input.volumeId} could not be found.`)
      authorize(volumePolicy, 'transfer:create', principal, { projectId: volume.projectId })
      if (volume.status !== 'available') throw badRequest(`Invalid volume: Status of volume ${volume.id} must be available to transfer it, but it is ${volume.status}.`)
      if (!input.noSnapshots) {
        const busy = await tx.selectFrom('volume_snapshots').select('id').where('volume_id', '=', volume.id).where('status', '!=', 'available').executeTakeFirst()
        if (busy) throw badRequest(`Invalid snapshot: Snapshot ${busy.id} of volume ${volume.id} is not available; a volume is transferred with its snapshots (or give no_snapshots).`)
      }
      const claimed = await tx.updateTable('volumes').set({ status: AWAITING_TRANSFER, updated_at: this.now() }).where('id', '=', volume.id).where('status', '=', 'available').executeTakeFirst()
      if (Number(claimed.numUpdatedRows) === 0) throw conflict(`Volume ${volume.id} changed status meanwhile; try again.`)
      const authKey = randomBytes(12).toString('base64url')
      const salt = randomBytes(8).toString('hex')
      const row: VolumeTransferTable = {
        id: randomUUID(),
        volume_id: volume.id,
        project_id: volume.projectId,
        name: input.name,
        salt,
        key_hash: keyHash(salt, authKey),
        no_snapshots: input.noSnapshots ? 1 : 0,
        created_at: this.now(),
      }
      await tx.insertInto('volume_transfers').values(row).execute()
      return { ...rowToTransfer(row), authKey }
    })
  }

  async get(principal: Principal, id: string): Promise<TransferRecord> {
    const row = await this.find(callerOf(principal), id)
    authorize(volumePolicy, 'transfer:get', principal, { projectId: row.project_id })
    return rowToTransfer(row)
  }

  /** The caller's project's transfers, or every project's with `allTenants` (admins), oldest first. */
  async list(principal: Principal, query: { allTenants: boolean }): Promise<TransferRecord[]> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'transfer:get_all', principal)
    if (query.allTenants) authorize(volumePolicy, 'volume:all_tenants', principal)
    let q = this.store.db.selectFrom('volume_transfers').selectAll()
    if (!query.allTenants) q = q.where('project_id', '=', caller.projectId)
    return (await q.orderBy('created_at').orderBy('id').execute()).map(rowToTransfer)
  }

  /** Withdraws the offer: the volume is available to its project again. */
  async delete(principal: Principal, id: string): Promise<void> {
    const caller = callerOf(principal)
    await this.store.db.transaction().execute(async (tx) => {
      const row = await this.find(caller, id, tx)
      authorize(volumePolicy, 'transfer:delete', principal, { projectId: row.project_id })
      await tx.deleteFrom('volume_transfers').where('id', '=', id).execute()
      await tx.updateTable('volumes').set({ status: 'available', updated_at: this.now() }).where('id', '=', row.volume_id).where('status', '=', AWAITING_TRANSFER).execute()
    })
  }

  /**
   * Takes the volume into the caller's project. Any project may try (the transfer is not theirs to see
   * otherwise), so a wrong key is 400 without telling more; the accepting project's quotas must hold the
   * volume and the snapshots that come with it (413).
   */
  async accept(principal: Principal, id: string, authKey: string): Promise<TransferRecord> {
    const caller = callerOf(principal)
    authorize(volumePolicy, 'transfer:accept', principal, { projectId: caller.projectId })
    return this.store.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('volume_transfers').selectAll().where('id', '=', id).executeTakeFirst()
      if (!row) throw notFound(`Transfer ${id} could not be found.`)
      if (!keyMatches(row, authKey)) throw badRequest(`Invalid auth key: Attempt to transfer ${id} with invalid auth key.`)
      const volume = await loadVolume(tx, row.volume_id)
      if (!volume || volume.status !== AWAITING_TRANSFER) {
        throw badRequest(`Invalid volume: Volume ${row.volume_id} is not awaiting transfer (its status is ${volume?.status ?? 'gone'}); the transfer cannot be accepted.`)
      }
      const snapshots = row.no_snapshots === 1 ? [] : await tx.selectFrom('volume_snapshots').select('size').where('volume_id', '=', volume.id).where('project_id', '=', volume.projectId).execute()
      if (caller.projectId !== volume.projectId) {
        const gigabytes = volume.size + snapshots.reduce((n, s) => n + s.size, 0)
        await checkQuota(tx, this.store.capabilities, caller.projectId, typedDelta(volume.volumeTypeName, { volumes: 1, snapshots: snapshots.length, gigabytes }))
      }
      const now = this.now()
      await tx.updateTable('volumes').set({ project_id: caller.projectId, user_id: caller.userId, status: 'available', updated_at: now }).where('id', '=', volume.id).execute()
      if (row.no_snapshots === 0) {
        await tx.updateTable('volume_snapshots').set({ project_id: caller.projectId, user_id: caller.userId, updated_at: now }).where('volume_id', '=', volume.id).where('project_id', '=', volume.projectId).execute()
      }
      await tx.deleteFrom('volume_transfers').where('id', '=', id).execute()
      return rowToTransfer(row)
    })
  }
}
