/** TOTP codes for tests of the second factor. */
import { totpCode, totpCodeOfStep, totpStep } from '../server/crypto/totp.js'

/**
 * `count` different 6-digit codes that none of the secret's steps from one minute before now to one minute after
 * matches, so they are wrong whatever the server's window.
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

/**
 * An authenticator app for tests that log in more than once: `next()` answers a code the server takes even when every
 * code handed out before was accepted. The server accepts the current and the previous 30 s step, each once, and no
 * step older than one it accepted (RFC 6238 §5.2). So: the previous step first, while the current one has more than
 * 15 s left to deliver it in (a CLI started with it logs in well within that); then the current step; then nothing
 * until the next step begins (next() waits for it).
 */
export class TotpApp {
  private lastStep = -Infinity

  constructor(private readonly secret: Buffer) {}

  async next(): Promise<string> {
    let now = Date.now()
    let current = totpStep(now)
    if (this.lastStep >= current) {
      await new Promise((resolve) => setTimeout(resolve, (current + 1) * 30_000 - now + 50))
      now = Date.now()
      current = totpStep(now)
    }
    const timeLeft = (current + 1) * 30_000 - now
    this.lastStep = this.lastStep < current - 1 && timeLeft > 15_000 ? current - 1 : current
    return totpCodeOfStep(this.secret, this.lastStep)
  }
}

/** Waits for the next 30 s step when the current one ends within 5 s, so that codes made now arrive in the step they were made for. */
export async function awayFromStepEnd(): Promise<void> {
  const left = 30_000 - (Date.now() % 30_000)
  if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 50))
}
