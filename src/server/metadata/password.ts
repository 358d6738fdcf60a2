/**
 * The password a guest posts to the metadata service (`POST /openstack/<version>/password`), as Nova's metadata
 * handler takes it (nova/api/metadata/password.py): cloudbase-init and similar agents post the password they
 * set, encrypted with the server's public key and base64-encoded, and the user reads it back through
 * `GET /servers/{id}/os-server-password`.
 *
 * - One post is taken: while a password is stored, another post is 409 (clear it through
 *   `DELETE /servers/{id}/os-server-password` first). That check comes before the size check, as in Nova.
 * - At most MAX_PASSWORD_BYTES bytes (Nova's four system metadata items of 255 characters: a 4096-bit key's
 *   ciphertext, base64, is 684 characters); a longer body is 400, as is a body that is not UTF-8 text.
 * - Stored in the server's system metadata, split over `password_0` … `password_3` (system-metadata.ts), where
 *   os-server-password reads it. Two posts at once: the keys' primary key lets one in, the other is 409.
 */
import type { Store } from '../storage/store.js'
import { isUniqueViolation } from '../storage/errors.js'
import { PASSWORD_KEYS, postedPassword } from '../compute/system-metadata.js'
import type { MetadataReply } from './service-paths.js'

/** Characters per system metadata item (Nova's CHUNK_LENGTH). */
export const PASSWORD_CHUNK = 255
/** The largest body a guest may post (Nova's MAX_SIZE: CHUNKS × CHUNK_LENGTH). */
export const MAX_PASSWORD_BYTES = PASSWORD_KEYS.length * PASSWORD_CHUNK

const TEXT = 'text/plain; charset=UTF-8'
const reply = (status: number, body: string): MetadataReply => ({ status, contentType: TEXT, body: Buffer.from(body) })

export const PASSWORD_CONFLICT = reply(409, '409 Conflict\n\nA password was posted already; it must be cleared (os-server-password) before another is accepted.\n')

/** Takes `body` as the password of server `serverId`'s guest: 200 stored, 409 one is stored already, 400 too long or not text. */
export async function postPassword(store: Store, serverId: string, body: Buffer): Promise<MetadataReply> {
  try {
    return await store.db.transaction().execute(async (tx) => {
      if ((await postedPassword(tx, serverId)) !== '') return PASSWORD_CONFLICT
      if (body.length > MAX_PASSWORD_BYTES) return reply(400, `400 Bad Request\n\nRequest is too large (at most ${MAX_PASSWORD_BYTES} bytes).\n`)
      let password: string
      try {
        password = new TextDecoder('utf-8', { fatal: true }).decode(body)
      } catch {
        return reply(400, '400 Bad Request\n\nThe password is not UTF-8 text.\n')
      }
      // By code points, so no chunk ends inside a surrogate pair (PostgreSQL would store half of one as U+FFFD).
      const points = Array.from(password)
      const chunks = PASSWORD_KEYS.map((_, i) => points.slice(i * PASSWORD_CHUNK, (i + 1) * PASSWORD_CHUNK).join('')).filter((c) => c !== '')
      // Empty items (a password cleared by setting them to '') go; stored ones never do: a post racing this one
      // and committed first keeps its password, and our insert then fails on the primary key.
      await tx.deleteFrom('server_system_metadata').where('server_id', '=', serverId).where('key', 'in', [...PASSWORD_KEYS]).where('value', '=', '').execute()
      if (chunks.length > 0) await tx.insertInto('server_system_metadata').values(chunks.map((value, i) => ({ server_id: serverId, key: PASSWORD_KEYS[i], value }))).execute()
      return reply(200, '')
    })
  } catch (err) {
    // Another post stored its password between our read and our insert.
    if (isUniqueViolation(err)) return PASSWORD_CONFLICT
    throw err
  }
}
