/** TOTP codes for tests of the second factor. */
import { totpCode } from '../server/crypto/totp.js'

/**
 * `count` different 6-digit codes that none of the secret's steps from one minute before now to one minute after
 * matches, so they are wrong under every server's window (Keystone's previous step, the IdP's one either side).
 */
export function wrongTotpCodes(secret: Buffer, count: number, now = Date.now()): string[] {
  const near = new Set([-60_000, -30_000, 0, 30_000, 60_000].map((offset) => totpCode(secret, now + offset)))
  const codes: string[] = []
  for (let n = Number(totpCode(secret, now)) + 1; codes.length < count; n++) {
    const code = String(n % 1_000_000).padStart(6, '0')
    if (!near.has(code)) codes.push(code)
  }
  return codes
}
