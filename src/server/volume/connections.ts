/**
 * Connecting attached volumes to hypervisors (Cinder's initialize_connection / terminate_connection): an
 * attachment gets a TLS-PSK key of its own on the volume's NBD export, the volume's storage place serves it, and
 * the hypervisor host is given the connection info — the key only through its own authenticated endpoint
 * (`forHost`), never in a command or a user-visible field.
 *
 * Only hosts whose hypervisor reads volumes' bytes (the qemu driver) are connected; simulated hosts attach
 * volumes without an export.
 */
import { badRequest, notFound } from '../../contracts/errors.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { RbdConnectionInfo, VolumeConnectionInfo } from '../../contracts/host/compute-driver.js'
import { hostCephUser } from '../ceph/host-users.js'
import { VolumeBackendError } from '../../contracts/host/volume.js'
import type { Db, Store } from '../storage/store.js'
import type { TaskQueue } from '../tasks/queue.js'
import { attachmentIdentity, connectionInfo, grantExport, nbdSourceOf, rbdConnectionInfo, revokeExport, type PortRange } from './exports.js'
import type { StoragePlaces } from './places/registry.js'
import { VOLUME_TASKS } from './worker.js'
import { volumeEncryption } from './encryption.js'

export interface VolumeConnectionsDeps {
  store: Store
  box: SecretBox
  places: StoragePlaces
  queue: TaskQueue
  ports: PortRange
  /** The volumes pool, when Ceph is configured: hypervisors open Ceph volumes there themselves. */
  cephVolumesPool?: string
}

export class VolumeConnections {
  constructor(private readonly deps: VolumeConnectionsDeps) {}

  /**
   * Connects the server's attachment of a volume for the hypervisor `hostId`: grants its key, has the storage
   * place serve the export, and answers the connection info (without the key). Repeating it changes nothing.
   */
  async connect(request: { volumeId: string; serverId: string; hostId: string }): Promise<VolumeConnectionInfo> {
    const { store, box, places, ports } = this.deps
    const attachment = await store.db
      .selectFrom('volume_attachments')
      .innerJoin('volumes', 'volumes.id', 'volume_attachments.volume_id')
      .select(['volume_attachments.id', 'volumes.location', 'volumes.backend'])
      .where('volume_attachments.volume_id', '=', request.volumeId)
      .where('volume_attachments.server_id', '=', request.serverId)
      .executeTakeFirst()
    if (!attachment) throw new VolumeBackendError(`volume ${request.volumeId} is not reserved for server ${request.serverId}`)
    if (!attachment.location) throw new VolumeBackendError(`volume ${request.volumeId} has no bytes yet`)
    if (attachment.backend === 'ceph') return this.connectRbd(request, attachment.id)
    const identity = attachmentIdentity(attachment.id)
    await store.db.transaction().execute(async (tx) => {
      await grantExport(tx, box, ports, { volumeId: request.volumeId, location: attachment.location!, identity, attachmentId: attachment.id })
      await tx.updateTable('volume_attachments').set({ host_id: request.hostId }).where('id', '=', attachment.id).execute()
    })
    await places.get(attachment.location).syncExports()
    const info = await this.encrypted(connectionInfo(await nbdSourceOf(store.db, box, identity), { volumeId: request.volumeId, attachmentId: attachment.id }, false), false)
    await store.db.updateTable('volume_attachments').set({ connection_info: JSON.stringify(info) }).where('id', '=', attachment.id).execute()
    return info
  }

  /**
   * Connects an attachment made through the attachments API for its consumer (Cinder's attachment_update with a
   * connector): an NBD volume's export is served and the answer carries its key, as Cinder's answer carries a
   * target's credentials; a Ceph volume is opened by a pcc host's own cephx user, so `connector.host` must name one.
   * The stored info never holds the key. Repeating it answers the same export and key.
   */
  async connectConsumer(attachmentId: string, connector: { host?: unknown }): Promise<VolumeConnectionInfo> {
    const { store, box, places, ports } = this.deps
    const attachment = await store.db
      .selectFrom('volume_attachments')
      .innerJoin('volumes', 'volumes.id', 'volume_attachments.volume_id')
      .select(['volume_attachments.volume_id', 'volume_attachments.attach_mode', 'volumes.location', 'volumes.backend'])
      .where('volume_attachments.id', '=', attachmentId)
      .executeTakeFirstOrThrow()
    const ids = { volumeId: attachment.volume_id, attachmentId }
    const accessMode = attachment.attach_mode === 'ro' ? 'ro' : 'rw'
    if (!attachment.location) throw badRequest(`Invalid volume: Volume ${ids.volumeId} has no data yet; wait until it is available.`)
    if (attachment.backend === 'ceph') {
      const pool = this.deps.cephVolumesPool
      if (!pool) throw new VolumeBackendError(`volume ${ids.volumeId} is in Ceph, and this control plane has no Ceph configured (PCC_CEPH_CONF)`)
      const host = typeof connector.host === 'string' ? await store.db.selectFrom('hosts').select('id').where('hostname', '=', connector.host).executeTakeFirst() : undefined
      if (!host) throw badRequest(`Invalid input received: volume ${ids.volumeId} is in Ceph, which a pcc host opens with its own cephx user: the connector's host must name a pcc host (openstack compute service list).`)
      const info = await this.encrypted(rbdConnectionInfo(pool, hostCephUser(host.id), ids, accessMode), false)
      await store.db.updateTable('volume_attachments').set({ host_id: host.id, connection_info: JSON.stringify(info) }).where('id', '=', attachmentId).execute()
      return info
    }
    const identity = attachmentIdentity(attachmentId)
    await store.db.transaction().execute((tx) => grantExport(tx, box, ports, { volumeId: ids.volumeId, location: attachment.location!, identity, attachmentId }))
    await places.get(attachment.location).syncExports()
    const source = await nbdSourceOf(store.db, box, identity)
    const stored = await this.encrypted(connectionInfo(source, ids, false, accessMode), false)
    await store.db.updateTable('volume_attachments').set({ connection_info: JSON.stringify(stored) }).where('id', '=', attachmentId).execute()
    return { ...stored, data: { ...stored.data, psk_key: source.pskKey } }
  }

  /** A Ceph volume: the hypervisor opens `volumes/volume-<id>` as its own cephx user; nothing to export or grant. */
  private async connectRbd(request: { volumeId: string; hostId: string }, attachmentId: string): Promise<RbdConnectionInfo> {
    const pool = this.deps.cephVolumesPool
    if (!pool) throw new VolumeBackendError(`volume ${request.volumeId} is in Ceph, and this control plane has no Ceph configured (PCC_CEPH_CONF)`)
    const info = await this.encrypted(rbdConnectionInfo(pool, hostCephUser(request.hostId), { volumeId: request.volumeId, attachmentId }), false)
    await this.deps.store.db.updateTable('volume_attachments').set({ host_id: request.hostId, connection_info: JSON.stringify(info) }).where('id', '=', attachmentId).execute()
    return info
  }

  /**
   * The connection info with its key, for the agent of `hostId`: only for an attachment connected on that host
   * (or of a server placed there); 404 otherwise, so a host learns nothing of other hosts' volumes.
   */
  async forHost(hostId: string, attachmentId: string): Promise<VolumeConnectionInfo> {
    const { store, box } = this.deps
    const row = await store.db
      .selectFrom('volume_attachments')
      .leftJoin('servers', 'servers.id', 'volume_attachments.server_id')
      .select(['volume_attachments.volume_id', 'volume_attachments.host_id', 'volume_attachments.connection_info', 'servers.host_id as server_host'])
      .where('volume_attachments.id', '=', attachmentId)
      .executeTakeFirst()
    if (!row || (row.host_id !== hostId && row.server_host !== hostId)) throw notFound(`Attachment ${attachmentId} is not connected on host ${hostId}.`)
    const stored = row.connection_info ? (JSON.parse(row.connection_info) as VolumeConnectionInfo) : undefined
    // An RBD connection names the host's own cephx user: one that moved (a migration) is named anew.
    if (stored?.driver_volume_type === 'rbd') return this.encrypted(rbdConnectionInfo(stored.data.name.split('/')[0], hostCephUser(hostId), { volumeId: row.volume_id, attachmentId }), true)
    const source = await nbdSourceOf(store.db, box, attachmentIdentity(attachmentId)).catch(() => {
      throw notFound(`Attachment ${attachmentId} has no export.`)
    })
    return this.encrypted(connectionInfo(source, { volumeId: row.volume_id, attachmentId }, true), true)
  }

  /** The info with the volume's LUKS parameters when it is encrypted; the passphrase only `withKey` (the host's endpoint). */
  async encrypted<I extends VolumeConnectionInfo>(info: I, withKey: boolean): Promise<I> {
    const encryption = await volumeEncryption(this.deps.store.db, this.deps.box, info.data.volume_id, withKey)
    return encryption ? { ...info, data: { ...info.data, encryption } } : info
  }

  /**
   * Inside the caller's transaction: revokes the attachment's key (the export goes with its last key) and
   * enqueues the sync that stops serving it, which runs once the transaction commits.
   */
  async disconnect(tx: Db, attachmentId: string): Promise<void> {
    const location = await revokeExport(tx, attachmentIdentity(attachmentId))
    if (location) await this.deps.queue.enqueue({ kind: VOLUME_TASKS.syncExports, subjectId: location, payload: { id: location } }, tx)
  }
}
