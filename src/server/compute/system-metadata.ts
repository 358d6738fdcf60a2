/** What Nova keeps in an instance's system metadata, for the few keys pcc needs (the shelved image). */
import type { Db } from '../storage/store.js'

export const SHELVE_KEYS = { imageId: 'shelved_image_id', at: 'shelved_at', host: 'shelved_host' } as const

/**
 * The guest's encrypted password, as a metadata service stores it (Nova splits it over four 255-character keys);
 * read and cleared through /servers/{id}/os-server-password.
 */
export const PASSWORD_KEYS = ['password_0', 'password_1', 'password_2', 'password_3'] as const

export async function systemMetadata(db: Db, serverId: string, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('server_system_metadata').select('value').where('server_id', '=', serverId).where('key', '=', key).executeTakeFirst()
  return row?.value
}

/** Sets keys (replacing their values) in one transaction's worth of statements. */
export async function setSystemMetadata(db: Db, serverId: string, entries: Record<string, string>): Promise<void> {
  const keys = Object.keys(entries)
  if (keys.length === 0) return
  await db.deleteFrom('server_system_metadata').where('server_id', '=', serverId).where('key', 'in', keys).execute()
  await db.insertInto('server_system_metadata').values(keys.map((key) => ({ server_id: serverId, key, value: entries[key] }))).execute()
}

/** Removes the given keys, or all of the server's when none are given. */
export async function deleteSystemMetadata(db: Db, serverId: string, keys?: string[]): Promise<void> {
  let q = db.deleteFrom('server_system_metadata').where('server_id', '=', serverId)
  if (keys) q = q.where('key', 'in', keys)
  await q.execute()
}

/** The password the guest posted, as its four system metadata parts joined ('' when none was posted). */
export async function postedPassword(db: Db, serverId: string): Promise<string> {
  const rows = await db.selectFrom('server_system_metadata').select(['key', 'value']).where('server_id', '=', serverId).where('key', 'in', [...PASSWORD_KEYS]).execute()
  const byKey = new Map(rows.map((r) => [r.key, r.value]))
  return PASSWORD_KEYS.map((k) => byKey.get(k) ?? '').join('')
}
