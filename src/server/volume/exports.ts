/**
 * The store's side of NBD exports: which volumes each storage place exports, on which port, in which generations,
 * and the TLS-PSK keys that open them. A key is granted per attachment (identity `att-<attachment id>`), per copy
 * to another place (`copy-<volume id>`) or per backup and restore (`backup-<id>`, `restore-<volume id>`); a
 * volume's export exists while it has at least one key. A backup of a snapshot exports the snapshot, read-only: its
 * export row is keyed by the snapshot's id and names the volume in `snapshot_of`. Keys are 256 random bits, sealed
 * with the master key at rest, and leave the control plane only to the place that serves the export (its desired
 * state) and to the hypervisor host of the attachment (its connection endpoint).
 *
 * Writes take the caller's transaction; the caller then syncs the place (at once when a hypervisor waits for the
 * export, through the durable `volume.sync_exports` task otherwise).
 */
import { randomBytes } from 'node:crypto'
import type { SecretBox } from '../crypto/secret-box.js'
import type { NbdSource, VolumeRef } from '../../contracts/host/volume.js'
import { exportName } from '../../contracts/host/volume.js'
import type { AccessMode, NbdConnectionInfo, RbdConnectionInfo } from '../../contracts/host/compute-driver.js'
import { isUniqueViolation } from '../storage/errors.js'
import type { Db, Store } from '../storage/store.js'
import type { StoragePlace, WantedExport } from '../../contracts/host/storage-place.js'

export interface PortRange {
  first: number
  last: number
}

export function attachmentIdentity(attachmentId: string): string {
  return `att-${attachmentId}`
}

export function copyIdentity(volumeId: string): string {
  return `copy-${volumeId}`
}

/** The key a backup reads a storage host's volume with. */
export function backupIdentity(backupId: string): string {
  return `backup-${backupId}`
}

/** The key a restore writes a storage host's volume with (one restore at a time per volume: `restoring-backup`). */
export function restoreIdentity(volumeId: string): string {
  return `restore-${volumeId}`
}

/**
 * Every export a place should serve, with its keys opened. With `address`, only those served there or not yet
 * served anywhere (several pcc-server processes share the controller place, each serving its own exports).
 */
export async function wantedExports(db: Db, box: SecretBox, location: string, address?: string): Promise<WantedExport[]> {
  let q = db
    .selectFrom('volume_exports')
    // A snapshot's bytes are on its volume's backend.
    .innerJoin('volumes', (join) => join.on((eb) => eb('volumes.id', '=', eb.fn.coalesce('volume_exports.snapshot_of', 'volume_exports.volume_id'))))
    .select(['volume_exports.volume_id', 'volume_exports.snapshot_of', 'volume_exports.port', 'volume_exports.generations', 'volumes.backend'])
    .where('volume_exports.location', '=', location)
  if (address !== undefined) q = q.where((eb) => eb.or([eb('volume_exports.address', 'is', null), eb('volume_exports.address', '=', address)]))
  const rows = await q.execute()
  if (rows.length === 0) return []
  const keys = await db.selectFrom('volume_export_keys').selectAll().where('volume_id', 'in', rows.map((r) => r.volume_id)).orderBy('created_at').execute()
  return rows.map((r) => ({
    volumeId: r.volume_id,
    ...(r.snapshot_of !== null ? { snapshotOf: r.snapshot_of } : {}),
    backend: r.backend,
    port: r.port,
    generations: JSON.parse(r.generations) as number[],
    keys: keys.filter((k) => k.volume_id === r.volume_id).map((k) => ({ identity: k.identity, key: box.openText(k.sealed_key) })),
  }))
}

/**
 * Grants `identity` the volume's export at `location`, creating the export on the lowest free port when it is
 * the first key. Answers the key (an existing grant keeps its key: a repeated call changes nothing). With
 * `snapshotOf`, `volumeId` is a snapshot of that volume, exported read-only.
 */
export async function grantExport(tx: Db, box: SecretBox, ports: PortRange, grant: { volumeId: string; snapshotOf?: string; location: string; identity: string; attachmentId?: string }): Promise<string> {
  const existing = await tx.selectFrom('volume_export_keys').select('sealed_key').where('identity', '=', grant.identity).executeTakeFirst()
  if (existing) return box.openText(existing.sealed_key)
  const exported = await tx.selectFrom('volume_exports').select('volume_id').where('volume_id', '=', grant.volumeId).executeTakeFirst()
  if (!exported) {
    const used = new Set((await tx.selectFrom('volume_exports').select('port').where('location', '=', grant.location).execute()).map((r) => r.port))
    let port = ports.first
    while (used.has(port)) port++
    if (port > ports.last) throw new Error(`no free export port left in ${ports.first}-${ports.last} at ${grant.location}`)
    try {
      await tx.insertInto('volume_exports').values({ volume_id: grant.volumeId, snapshot_of: grant.snapshotOf ?? null, location: grant.location, address: null, port, generations: '[0]', created_at: Date.now() }).execute()
    } catch (err) {
      // Another transaction took the port first; the caller's retry picks the next one.
      if (isUniqueViolation(err)) throw new Error(`export port ${port} at ${grant.location} was taken concurrently; try again`, { cause: err })
      throw err
    }
  }
  const key = randomBytes(32).toString('hex')
  await tx
    .insertInto('volume_export_keys')
    .values({ identity: grant.identity, volume_id: grant.volumeId, attachment_id: grant.attachmentId ?? null, sealed_key: box.seal(key), created_at: Date.now() })
    .execute()
  return key
}

/** Revokes a key; the volume's export goes with its last key. Answers the place whose exports changed, if any. */
export async function revokeExport(tx: Db, identity: string): Promise<string | undefined> {
  const key = await tx.selectFrom('volume_export_keys').select('volume_id').where('identity', '=', identity).executeTakeFirst()
  if (!key) return undefined
  await tx.deleteFrom('volume_export_keys').where('identity', '=', identity).execute()
  const exp = await tx.selectFrom('volume_exports').select('location').where('volume_id', '=', key.volume_id).executeTakeFirst()
  const left = await tx.selectFrom('volume_export_keys').select('identity').where('volume_id', '=', key.volume_id).executeTakeFirst()
  if (!left) await tx.deleteFrom('volume_exports').where('volume_id', '=', key.volume_id).execute()
  return exp?.location
}

/**
 * Records the address a place serves its exports on. A storage host has one (its exports follow it when it
 * changes); on the controller place only exports not yet served anywhere are claimed (`claimOnly`).
 */
export async function setExportAddress(db: Db, location: string, address: string, claimOnly = false): Promise<void> {
  await db
    .updateTable('volume_exports')
    .set({ address })
    .where('location', '=', location)
    .where((eb) => (claimOnly ? eb('address', 'is', null) : eb.or([eb('address', 'is', null), eb('address', '!=', address)])))
    .execute()
}

/** Adds the next generation of a volume's export (online extend); answers it, or undefined when not exported. */
export async function addGeneration(tx: Db, volumeId: string): Promise<number | undefined> {
  const row = await tx.selectFrom('volume_exports').select('generations').where('volume_id', '=', volumeId).executeTakeFirst()
  if (!row) return undefined
  const generations = JSON.parse(row.generations) as number[]
  const next = generations[generations.length - 1] + 1
  await tx.updateTable('volume_exports').set({ generations: JSON.stringify([...generations, next]) }).where('volume_id', '=', volumeId).execute()
  return next
}

/** Keeps only the newest generation (every client moved to it). */
export async function dropOldGenerations(tx: Db, volumeId: string): Promise<void> {
  const row = await tx.selectFrom('volume_exports').select('generations').where('volume_id', '=', volumeId).executeTakeFirst()
  if (!row) return
  const generations = JSON.parse(row.generations) as number[]
  await tx.updateTable('volume_exports').set({ generations: JSON.stringify(generations.slice(-1)) }).where('volume_id', '=', volumeId).execute()
}

/** Where a key's holder connects: the export's current generation at the place's address. */
export async function nbdSourceOf(db: Db, box: SecretBox, identity: string): Promise<NbdSource> {
  const row = await db
    .selectFrom('volume_export_keys')
    .innerJoin('volume_exports', 'volume_exports.volume_id', 'volume_export_keys.volume_id')
    .select(['volume_export_keys.volume_id', 'volume_export_keys.sealed_key', 'volume_exports.address', 'volume_exports.port', 'volume_exports.generations'])
    .where('volume_export_keys.identity', '=', identity)
    .executeTakeFirst()
  if (!row || !row.address) throw new Error(`the export for ${identity} is not served yet`)
  const generations = JSON.parse(row.generations) as number[]
  return { host: row.address, port: row.port, export: exportName(row.volume_id, generations[generations.length - 1]), pskIdentity: identity, pskKey: box.openText(row.sealed_key) }
}

/**
 * Runs `use` with an NBD source for the export of a volume (or of a snapshot: read-only) under a key of its own
 * (`identity`; copies between places, backups, restores), served by `place`, where the volume is. The key is
 * revoked and the place synced afterwards, also when `use` fails, so neither the key nor (when it was the last)
 * the daemon is left behind.
 */
export async function withExportedVolume<T>(deps: { store: Store; box: SecretBox; ports: PortRange }, place: StoragePlace, ref: VolumeRef, identity: string, use: (source: NbdSource) => Promise<T>): Promise<T> {
  const { store, box, ports } = deps
  const exported = 'snapshotId' in ref ? { volumeId: ref.snapshotId, snapshotOf: ref.snapshotOf } : { volumeId: ref.volumeId }
  await store.db.transaction().execute((tx) => grantExport(tx, box, ports, { ...exported, location: place.location, identity }))
  try {
    await place.syncExports()
    return await use(await nbdSourceOf(store.db, box, identity))
  } finally {
    await store.db.transaction().execute((tx) => revokeExport(tx, identity))
    await place.syncExports()
  }
}

/** Cinder's connection_info for an attachment: `driver_volume_type: nbd`; the key only when `withKey`. */
export function connectionInfo(source: NbdSource, ids: { volumeId: string; attachmentId: string }, withKey: boolean, accessMode: AccessMode = 'rw'): NbdConnectionInfo {
  return {
    driver_volume_type: 'nbd',
    data: {
      host: source.host,
      port: source.port,
      export: source.export,
      tls: 'psk',
      psk_identity: source.pskIdentity,
      ...(withKey ? { psk_key: source.pskKey } : {}),
      volume_id: ids.volumeId,
      attachment_id: ids.attachmentId,
      // Nova uses the volume id as the disk's serial; virtio-blk keeps its first 20 bytes.
      serial: ids.volumeId,
      access_mode: accessMode,
    },
  }
}

/** Cinder's RBD connection_info for a Ceph volume, for the hypervisor host whose cephx user opens it. */
export function rbdConnectionInfo(pool: string, hostUser: string, ids: { volumeId: string; attachmentId: string }, accessMode: AccessMode = 'rw'): RbdConnectionInfo {
  return {
    driver_volume_type: 'rbd',
    data: { name: `${pool}/volume-${ids.volumeId}`, auth_enabled: true, auth_username: hostUser, volume_id: ids.volumeId, attachment_id: ids.attachmentId, serial: ids.volumeId, access_mode: accessMode },
  }
}
