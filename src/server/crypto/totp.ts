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

export function totpCode(secret: Buffer, timeMs: number, step = 30, digits = 6): string {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(timeMs / 1000 / step)))
  const mac = createHmac('sha1', secret).update(counter).digest()
  const offset = mac[mac.length - 1] & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 10 ** digits).padStart(digits, '0')
}

/** True when `code` matches the current step or one step either side (clock drift), compared in constant time. */
export function verifyTotp(secret: Buffer, code: string, timeMs: number, window = 1): boolean {
  if (!/^\d{6}$/.test(code)) return false
  let ok = false
  for (let i = -window; i <= window; i++) {
    const expected = Buffer.from(totpCode(secret, timeMs + i * 30_000))
    if (timingSafeEqual(expected, Buffer.from(code))) ok = true
  }
  return ok
}
