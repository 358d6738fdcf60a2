/**
 * Volume type encryption (docs/block-storage.md, "Encrypted volumes"). An admin gives a type an encryption spec,
 * as Cinder stores it; a volume of a type whose spec pcc can apply (LUKS, decrypted by the hypervisor) gets a
 * random LUKS passphrase made here and sealed with the master key. The key never appears in an answer or a log:
 * it reaches only the hypervisor that opens the volume, through its own host endpoint (connections.ts).
 *
 * The API keeps what Cinder keeps (Tempest sets a provider and control location pcc cannot apply and reads them
 * back); what pcc cannot apply is refused when a volume of the type is made, with the reason (`unappliable`).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { badRequest, notFound } from '../../contracts/errors.js'
import type { VolumeEncryption } from '../../contracts/host/compute-driver.js'
import type { Principal } from '../auth/principal.js'
import type { SecretBox } from '../crypto/secret-box.js'
import { authorize } from '../policy/rules.js'
import { volumePolicy } from '../policy/volume.policy.js'
import type { Db, Store } from '../storage/store.js'
import type { VolumeTypeEncryptionTable } from '../storage/tables/volume.js'
import { cinderTime } from './model.js'
import { resolveType } from './repo.js'

/** Cinder's names for the LUKS encryptor (os-brick maps each to it). */
const LUKS_PROVIDERS: readonly string[] = ['luks', 'LuksEncryptor', 'nova.volume.encryptors.luks.LuksEncryptor', 'os_brick.encryptors.luks.LuksEncryptor']
export const CONTROL_LOCATIONS = ['front-end', 'back-end'] as const
const DEFAULT_CIPHER = 'aes-xts-plain64'
/** The ciphers QEMU's luks driver is asked for, with the key sizes (bits) each takes; the first is the default. */
const LUKS_CIPHERS: Record<string, readonly number[]> = { 'aes-xts-plain64': [256, 512] }
/** Bytes of random passphrase per volume (LUKS derives its master key from it with PBKDF2). */
const PASSPHRASE_BYTES = 32

export interface TypeEncryption {
  volumeTypeId: string
  encryptionId: string
  provider: string
  cipher: string | null
  keySize: number | null
  controlLocation: string
  createdAt: number
  updatedAt: number | null
}

export interface EncryptionInput {
  provider?: string
  cipher?: string | null
  key_size?: number | null
  control_location?: string
}

function rowToEncryption(row: VolumeTypeEncryptionTable): TypeEncryption {
  return {
    volumeTypeId: row.volume_type_id,
    encryptionId: row.encryption_id,
    provider: row.provider,
    cipher: row.cipher,
    keySize: row.key_size === null ? null : Number(row.key_size),
    controlLocation: row.control_location,
    createdAt: Number(row.created_at),
    updatedAt: row.updated_at === null ? null : Number(row.updated_at),
  }
}

/** The spec as Cinder's create answers it. */
export function encryptionFields(e: TypeEncryption) {
  return { volume_type_id: e.volumeTypeId, encryption_id: e.encryptionId, provider: e.provider, cipher: e.cipher, key_size: e.keySize, control_location: e.controlLocation }
}

/** The spec as Cinder's show answers it (with its soft-delete columns). */
export function encryptionDetail(e: TypeEncryption) {
  return { ...encryptionFields(e), deleted: false, created_at: cinderTime(e.createdAt), updated_at: e.updatedAt === null ? null : cinderTime(e.updatedAt), deleted_at: null }
}

/** Why pcc cannot apply a spec to a volume's bytes, or undefined when it can. */
export function unappliable(e: TypeEncryption): string | undefined {
  if (!LUKS_PROVIDERS.includes(e.provider)) return `pcc encrypts volumes with LUKS only (provider luks), not ${e.provider}`
  if (e.controlLocation !== 'front-end') return 'pcc encrypts volumes in the hypervisor only (control_location front-end); its storage backends do not encrypt'
  const cipher = e.cipher ?? DEFAULT_CIPHER
  const sizes = LUKS_CIPHERS[cipher]
  if (!sizes) return `pcc's LUKS ciphers are ${Object.keys(LUKS_CIPHERS).join(', ')}, not ${cipher}`
  if (e.keySize !== null && !sizes.includes(e.keySize)) return `cipher ${cipher} takes a key of ${sizes.join(' or ')} bits, not ${e.keySize}`
  return undefined
}

function checkInput(input: EncryptionInput): void {
  if (input.provider !== undefined && input.provider.trim() === '') throw badRequest('Invalid input received: provider must not be empty.')
  if (input.control_location !== undefined && !(CONTROL_LOCATIONS as readonly string[]).includes(input.control_location)) {
    throw badRequest(`Invalid input received: Valid control location are: ${CONTROL_LOCATIONS.join(', ')}`)
  }
}

export async function typeEncryption(db: Db, volumeTypeId: string): Promise<TypeEncryption | undefined> {
  const row = await db.selectFrom('volume_type_encryption').selectAll().where('volume_type_id', '=', volumeTypeId).executeTakeFirst()
  return row ? rowToEncryption(row) : undefined
}

/** Cinder refuses every change to a type's encryption while volumes of the type exist (their keys follow it). */
async function refuseInUse(tx: Db, volumeTypeId: string, what: 'create' | 'update' | 'delete'): Promise<void> {
  if (await tx.selectFrom('volumes').select('id').where('volume_type_id', '=', volumeTypeId).executeTakeFirst()) {
    throw badRequest(`Cannot ${what} encryption specs. Volume type in use.`)
  }
}

/** The admin API over types' encryption (`/types/{id}/encryption`). */
export class VolumeTypeEncryptionService {
  constructor(private readonly store: Store) {}

  async get(principal: Principal, typeRef: string): Promise<TypeEncryption | undefined> {
    authorize(volumePolicy, 'type:encryption:manage', principal)
    return typeEncryption(this.store.db, (await resolveType(this.store.db, typeRef)).id)
  }

  async create(principal: Principal, typeRef: string, input: EncryptionInput & { provider: string }): Promise<TypeEncryption> {
    authorize(volumePolicy, 'type:encryption:manage', principal)
    checkInput(input)
    return this.store.db.transaction().execute(async (tx) => {
      const type = await resolveType(tx, typeRef)
      if (await typeEncryption(tx, type.id)) throw badRequest(`Volume type encryption for type ${type.id} already exists.`)
      await refuseInUse(tx, type.id, 'create')
      const row = {
        volume_type_id: type.id,
        encryption_id: randomUUID(),
        provider: input.provider,
        cipher: input.cipher ?? DEFAULT_CIPHER,
        key_size: input.key_size ?? null,
        control_location: input.control_location ?? 'front-end',
        created_at: Date.now(),
        updated_at: null,
      }
      await tx.insertInto('volume_type_encryption').values(row).execute()
      return rowToEncryption(row)
    })
  }

  /**
   * A type has one spec, so the URL's last segment names nothing: Cinder ignores it, and clients rely on that
   * (Debian's Tempest 33 changes and deletes `…/encryption/provider`).
   */
  async update(principal: Principal, typeRef: string, input: EncryptionInput): Promise<void> {
    authorize(volumePolicy, 'type:encryption:manage', principal)
    checkInput(input)
    await this.store.db.transaction().execute(async (tx) => {
      const type = await resolveType(tx, typeRef)
      const current = await typeEncryption(tx, type.id)
      if (!current) throw notFound(`Volume type encryption for type ${type.id} does not exist.`)
      await refuseInUse(tx, type.id, 'update')
      const changes = {
        ...(input.provider !== undefined ? { provider: input.provider } : {}),
        ...(input.cipher !== undefined ? { cipher: input.cipher } : {}),
        ...(input.key_size !== undefined ? { key_size: input.key_size } : {}),
        ...(input.control_location !== undefined ? { control_location: input.control_location } : {}),
      }
      await tx
        .updateTable('volume_type_encryption')
        .set({ ...changes, updated_at: Date.now() })
        .where('volume_type_id', '=', type.id)
        .execute()
    })
  }

  async delete(principal: Principal, typeRef: string): Promise<void> {
    authorize(volumePolicy, 'type:encryption:manage', principal)
    await this.store.db.transaction().execute(async (tx) => {
      const type = await resolveType(tx, typeRef)
      const current = await typeEncryption(tx, type.id)
      if (!current) throw notFound(`Volume type encryption for type ${type.id} does not exist.`)
      await refuseInUse(tx, type.id, 'delete')
      await tx.deleteFrom('volume_type_encryption').where('volume_type_id', '=', type.id).execute()
    })
  }
}

/**
 * Where a new volume's bytes come from, as far as its encryption is concerned: a copy of a volume (a clone, a
 * volume from a snapshot) or a restored backup carries the bytes of its source as they were, encrypted or not.
 */
export type VolumeOrigin = { kind: 'blank' } | { kind: 'image' } | { kind: 'copy' | 'backup'; encryptionKeyId: string | null }

/** How the refusals name a new volume's source. */
const SOURCE_WORDS = { copy: 'a copy of', backup: 'a restore of a backup of' } as const

/**
 * Inside volume create's transaction: the key of a new volume of type `volumeTypeId`, or null when the type is
 * not encrypted. A blank volume gets a new key; a copy of an encrypted volume (a clone, a volume from a snapshot)
 * holds the same LUKS container, so it shares its source's key. Refused (400): a spec pcc cannot apply, an image
 * written into an encrypted volume (the image's bytes would be plaintext there) and a copy that would change
 * whether the bytes are encrypted.
 */
export async function keyForNewVolume(tx: Db, box: SecretBox, volumeTypeId: string, origin: VolumeOrigin): Promise<string | null> {
  const spec = await typeEncryption(tx, volumeTypeId)
  const sourceKey = origin.kind === 'copy' || origin.kind === 'backup' ? origin.encryptionKeyId : null
  if (!spec) {
    if (sourceKey) throw badRequest(`Invalid input received: ${SOURCE_WORDS[origin.kind as 'copy' | 'backup']} an encrypted volume must be of an encrypted volume type (its bytes stay encrypted).`)
    return null
  }
  const why = unappliable(spec)
  if (why) throw badRequest(`Invalid volume type: volumes of this type cannot be made: ${why}.`)
  if (origin.kind === 'image') throw badRequest('Invalid input received: pcc cannot write an image into an encrypted volume yet; make the volume of an unencrypted type.')
  if (origin.kind === 'copy' || origin.kind === 'backup') {
    if (!sourceKey) throw badRequest(`Invalid input received: ${SOURCE_WORDS[origin.kind]} an unencrypted volume cannot be of an encrypted volume type.`)
    return sourceKey
  }
  const id = randomUUID()
  const cipher = spec.cipher ?? DEFAULT_CIPHER
  const keySize = spec.keySize ?? LUKS_CIPHERS[cipher][0]
  await tx
    .insertInto('volume_encryption_keys')
    .values({ id, sealed_key: box.seal(randomBytes(PASSPHRASE_BYTES).toString('base64')), cipher, key_size: keySize, created_at: Date.now() })
    .execute()
  return id
}

/** Whether a volume may move to another type: only when both say the same about encryption (its bytes do not change). */
export async function refuseEncryptionChange(db: Db, volume: { id: string; encrypted: boolean }, volumeTypeId: string): Promise<void> {
  const encrypted = (await typeEncryption(db, volumeTypeId)) !== undefined
  if (encrypted !== volume.encrypted) throw badRequest(`Invalid input received: volume ${volume.id} is ${volume.encrypted ? '' : 'not '}encrypted; retyping cannot ${volume.encrypted ? 'decrypt' : 'encrypt'} its bytes.`)
}

/**
 * A copy of a key under a new id (Cinder's clone_encryption_key): the backup of an encrypted volume keeps one, so
 * that the key outlives the volume and the volume's later fate (a restore onto it replaces its key) never touches
 * the backup's. The sealed passphrase is copied as it is: the same master key opens it.
 */
export async function cloneKey(tx: Db, keyId: string): Promise<string> {
  const key = await tx.selectFrom('volume_encryption_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow()
  const id = randomUUID()
  await tx.insertInto('volume_encryption_keys').values({ ...key, id, created_at: Date.now() }).execute()
  return id
}

/** The key of a volume's LUKS container (null: not encrypted); a copy of its bytes is opened with the same key. */
export async function encryptionKeyOf(db: Db, volumeId: string): Promise<string | null> {
  return (await db.selectFrom('volumes').select('encryption_key_id').where('id', '=', volumeId).executeTakeFirst())?.encryption_key_id ?? null
}

/** The rows that hold a key: a key goes when none of them names it any more. */
const KEY_HOLDERS = ['volumes', 'volume_backups'] as const

/** Drops a key nothing uses any more (after a volume's or a backup's row is gone, or its key replaced). */
export async function dropUnusedKey(tx: Db, keyId: string | null): Promise<void> {
  if (!keyId) return
  for (const table of KEY_HOLDERS) {
    if (await tx.selectFrom(table).select('id').where('encryption_key_id', '=', keyId).executeTakeFirst()) return
  }
  await tx.deleteFrom('volume_encryption_keys').where('id', '=', keyId).execute()
}

/**
 * What a hypervisor needs to open a volume's LUKS container. `withKey` false: the shape stored in connection
 * info (commands and the attachments table carry it); true: with the passphrase, for the host endpoint only.
 */
export async function volumeEncryption(db: Db, box: SecretBox, volumeId: string, withKey: boolean): Promise<VolumeEncryption | undefined> {
  const row = await db
    .selectFrom('volumes')
    .innerJoin('volume_encryption_keys', 'volume_encryption_keys.id', 'volumes.encryption_key_id')
    .select(['volume_encryption_keys.sealed_key', 'volume_encryption_keys.cipher', 'volume_encryption_keys.key_size'])
    .where('volumes.id', '=', volumeId)
    .executeTakeFirst()
  if (!row) return undefined
  const base: VolumeEncryption = { format: 'luks', cipher: row.cipher, key_size: Number(row.key_size) }
  return withKey ? { ...base, passphrase: box.openText(row.sealed_key) } : base
}
