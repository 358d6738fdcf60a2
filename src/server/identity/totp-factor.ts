/**
 * The check of a TOTP passcode, the one copy every login surface uses (Keystone's `totp` method, the IdP's password
 * grant and login page): RFC 6238 with SHA-1, 6 digits and 30-second steps, against the user's identity credentials
 * of type `totp` (the base32 seed, sealed with the master key as /v3/credentials stores it; a blob that does not open
 * matches nothing). Decisions (docs/identity.md, "MFA"):
 * - the window is Keystone's: the current step and the one before it (a code typed as its step ends still counts),
 *   never a future step;
 * - codes are compared in constant time, every step of the window for every credential;
 * - a code is accepted once (RFC 6238 §5.2): only for a step newer than the last one its credential accepted. The
 *   step is claimed by a conditional UPDATE, so of two logins sending the same code at once, in one process or in
 *   two, exactly one succeeds. Once a code was accepted, older steps are refused too.
 */
import type { SecretBox } from '../crypto/secret-box.js'
import { base32Decode, totpCodeMatches, totpStep } from '../crypto/totp.js'
import type { Db } from '../storage/store.js'
import { claimTotpStep, listUserTotpSeeds } from './repo/credentials.repo.js'

/** The steps a code may come from, relative to the current one. */
const WINDOW = [0, -1]

/** True when the passcode is the code of a step not used before of one of the user's TOTP credentials; that step is then used. */
export async function verifyPasscode(db: Db, box: SecretBox, userId: string, passcode: string, now: number): Promise<boolean> {
  const credentials = await listUserTotpSeeds(db, userId)
  const current = totpStep(now)
  for (const credential of credentials) {
    const seed = seedOf(box, credential.blob)
    if (!seed) continue
    const matching = WINDOW.map((offset) => current + offset).filter((step) => totpCodeMatches(seed, passcode, step))
    if (matching.length > 0 && (await claimTotpStep(db, credential.id, Math.max(...matching)))) return true
  }
  return false
}

function seedOf(box: SecretBox, blob: string): Buffer | undefined {
  try {
    return base32Decode(box.openText(blob))
  } catch {
    // Not sealed with this master key, or altered: no code matches it; the user's other credentials are still tried.
    return undefined
  }
}
