/**
 * TOTP (RFC 6238) over HMAC-SHA1 with 30-second steps and 6 digits, the parameters authenticator apps and
 * Keystone use. Secrets travel as base32 (RFC 4648, no padding).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

export function base32Decode(text: string): Buffer {
  const clean = text.toUpperCase().replace(/=+$/, '').replace(/\s+/g, '')
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const char of clean) {
    const index = ALPHABET.indexOf(char)
    if (index < 0) throw new Error('not a base32 string')
    value = (value << 5) | index
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

export function base32Encode(data: Buffer): string {
  let bits = 0
  let value = 0
  let out = ''
  for (const byte of data) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31]
  return out
}

/** RFC 6238's time step T of a moment: the number of 30-second steps since the Unix epoch. */
export function totpStep(timeMs: number): number {
  return Math.floor(timeMs / 30_000)
}

/** The code of one time step (RFC 4226's HOTP of the step counter). */
export function totpCodeOfStep(secret: Buffer, counter: number): string {
  const buffer = Buffer.alloc(8)
  buffer.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac('sha1', secret).update(buffer).digest()
  const offset = mac[mac.length - 1] & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 1_000_000).padStart(6, '0')
}

/** The code of the step a moment falls in (what an authenticator app shows then). */
export function totpCode(secret: Buffer, timeMs: number): string {
  return totpCodeOfStep(secret, totpStep(timeMs))
}

/** Whether `code` is the code of step `counter`, compared in constant time (6 digits; anything else is false). */
export function totpCodeMatches(secret: Buffer, code: string, counter: number): boolean {
  if (!/^\d{6}$/.test(code)) return false
  return timingSafeEqual(Buffer.from(totpCodeOfStep(secret, counter)), Buffer.from(code))
}
