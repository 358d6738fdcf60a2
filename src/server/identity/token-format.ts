/**
 * The wire form of identity tokens: authenticated encryption (AES-256-GCM) of a small JSON payload under a key
 * of the token key ring. The holder can read nothing from it; the server validates it without the database.
 * Layout, base64url: version (1 byte) | key id (8 bytes) | iv (12) | tag (16) | ciphertext.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto'
import { pooledRandom } from './random-pool.js'

export interface TokenPayload {
  /** user id */
  u: string
  /** methods used to authenticate */
  m: string[]
  /** scope: project id, domain id, system, or none */
  s: { p: string } | { d: string } | { sys: 'all' } | null
  /** issued at, expires at (epoch ms) */
  i: number
  e: number
  /** audit ids: this token's first, then the chain it was rescoped from */
  a: string[]
  /** application credential id */
  ac?: string
  /** OAuth 1.0a access token id (OS-OAUTH1) */
  oa?: string
  /** 'r' for an MFA auth receipt (never accepted as a token); absent for tokens */
  k?: 'r'
}

export interface TokenKey {
  id: Buffer
  secret: Buffer
}

const VERSION = 1

export function encodeToken(payload: TokenPayload, key: TokenKey): string {
  const iv = pooledRandom(12)
  const cipher = createCipheriv('aes-256-gcm', key.secret, iv)
  cipher.setAAD(key.id)
  const body = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), key.id, iv, cipher.getAuthTag(), body]).toString('base64url')
}

/** The key id a token names, to pick the key to open it with; undefined for anything malformed. */
export function tokenKeyId(token: string): string | undefined {
  if (token.length < 60 || token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined
  const raw = Buffer.from(token, 'base64url')
  if (raw[0] !== VERSION) return undefined
  return raw.subarray(1, 9).toString('hex')
}

/** Opens a token; undefined when it was not made with this key or was altered. */
export function decodeToken(token: string, key: TokenKey): TokenPayload | undefined {
  const raw = Buffer.from(token, 'base64url')
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.secret, raw.subarray(9, 21))
    decipher.setAAD(raw.subarray(1, 9))
    decipher.setAuthTag(raw.subarray(21, 37))
    const text = Buffer.concat([decipher.update(raw.subarray(37)), decipher.final()]).toString('utf8')
    return JSON.parse(text) as TokenPayload
  } catch {
    return undefined
  }
}
