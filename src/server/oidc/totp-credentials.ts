/**
 * Reads a user's TOTP secrets from identity's credentials (type `totp`, blob = base32 secret, sealed with the
 * master key or in clear). The table belongs to identity; this is the one place the IdP touches it, through an
 * untyped query, so the IdP builds before and after identity adds it. No table yet → no secrets.
 */
import type { Kysely } from 'kysely'
import type { SecretBox } from '../crypto/secret-box.js'
import { base32Decode, verifyTotp } from '../crypto/totp.js'
import type { Db } from '../storage/store.js'

export async function totpSecretsOf(db: Db, box: SecretBox, userId: string): Promise<Buffer[]> {
  let rows: { blob: string }[]
  try {
    rows = (await (db as unknown as Kysely<Record<string, { user_id: string; type: string; blob: string }>>)
      .selectFrom('credentials')
      .select('blob')
      .where('user_id', '=', userId)
      .where('type', '=', 'totp')
      .execute()) as { blob: string }[]
  } catch {
    return []
  }
  const secrets: Buffer[] = []
  for (const { blob } of rows) {
    try {
      secrets.push(base32Decode(blob.startsWith('v1.') ? box.openText(blob) : blob))
    } catch {
      // A credential that is not a base32 secret cannot match any code; the others are still tried.
    }
  }
  return secrets
}

/** True when the code matches one of the user's TOTP secrets (current 30 s step or one either side). */
export async function verifyUserTotp(db: Db, box: SecretBox, userId: string, code: string, now: number): Promise<boolean> {
  const secrets = await totpSecretsOf(db, box, userId)
  return secrets.some((secret) => verifyTotp(secret, code, now))
}
