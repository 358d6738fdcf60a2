/** The IdP's opaque credentials (codes, refresh and access tokens, device codes): random, and kept only as hashes. */
import { createHash, randomBytes } from 'node:crypto'

/** 256 random bits, base64url (43 characters). */
export const randomToken = () => randomBytes(32).toString('base64url')

/** What the store keeps of a credential: its SHA-256, hex. A lookup by hash needs no constant-time compare. */
export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex')

/** An id for a row or a grant: 128 random bits, hex. */
export const randomId = () => randomBytes(16).toString('hex')
