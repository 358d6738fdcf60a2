/**
 * Encryption of secrets at rest (client secrets, TOTP seeds, token and signing keys) with AES-256-GCM under
 * the master key. Sealed values are text: "v1." + base64url(iv | tag | ciphertext).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

const PREFIX = 'v1.'

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes')
  }

  seal(plaintext: string | Buffer): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
  }

  /** Throws when the value was not sealed with this key or was altered. */
  open(sealed: string): Buffer {
    if (!sealed.startsWith(PREFIX)) throw new Error('not a sealed value')
    const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64url')
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()])
  }

  openText(sealed: string): string {
    return this.open(sealed).toString('utf8')
  }
}
