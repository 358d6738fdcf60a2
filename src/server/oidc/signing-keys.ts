/**
 * The RS256 keys that sign ID tokens. Kept in the store (private keys sealed with the master key) so every
 * server process signs with the same key: the newest row is the current key. A process rereads the rows when
 * its copy is older than `reloadMs`, so a key another process created is used within that time. When the
 * current key is older than the rotation period, the next signer creates a new one (no timer needed). A
 * retired key stays in the JWKS until every ID token it signed has expired, then it is deleted.
 */
import { createPrivateKey, generateKeyPair, randomBytes, type KeyObject } from 'node:crypto'
import { promisify } from 'node:util'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'

const generateRsa = promisify(generateKeyPair)

export interface PublicJwk {
  kty: 'RSA'
  kid: string
  use: 'sig'
  alg: 'RS256'
  n: string
  e: string
}

interface LoadedKey {
  id: string
  createdAt: number
  publicJwk: PublicJwk
  privateKey: KeyObject
}

export interface SigningKeyOptions {
  rotationMs: number
  /** Lifetime of an ID token: a retired key is published this long (plus a margin) after its retirement. */
  idTokenTtlMs: number
  reloadMs?: number
  now?: () => number
}

/** Published a little longer than strictly needed, for clock skew between processes and verifiers. */
const RETIRED_MARGIN_MS = 5 * 60_000
const JWKS_MAX_AGE_MS = 1000

export class SigningKeys {
  private keys: LoadedKey[] = []
  private loadedAt = -Infinity
  private loading: Promise<void> | undefined
  private rotating: Promise<void> | undefined

  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly options: SigningKeyOptions,
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** The key new tokens are signed with; rotates first when it is due. */
  async current(): Promise<{ kid: string; privateKey: KeyObject }> {
    await this.fresh()
    const newest = this.keys[0]
    if (!newest || newest.createdAt + this.options.rotationMs <= this.now()) {
      await this.rotate()
    }
    const key = this.keys[0]!
    return { kid: key.id, privateKey: key.privateKey }
  }

  /** Public keys a verifier needs: the current key and the retired keys whose tokens may still be valid. */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    // At most a second old: with several processes, a key another one just started signing with must reach
    // verifiers (kube-apiserver refetches the JWKS on an unknown kid) through whichever process answers.
    await this.fresh(JWKS_MAX_AGE_MS)
    if (this.keys.length === 0) await this.rotate()
    return { keys: this.keys.map((k) => k.publicJwk) }
  }

  /** Creates a new current key now (also the admin's "rotate now"), and deletes keys nobody can need any more. */
  rotate(): Promise<void> {
    return (this.rotating ??= this.doRotate().finally(() => (this.rotating = undefined)))
  }

  private async doRotate(): Promise<void> {
    const { publicKey, privateKey } = await generateRsa('rsa', { modulusLength: 2048 })
    const jwk = publicKey.export({ format: 'jwk' }) as { n: string; e: string }
    const id = randomBytes(20).toString('hex')
    const now = this.now()
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string
    const publicJwk: PublicJwk = { kty: 'RSA', kid: id, use: 'sig', alg: 'RS256', n: jwk.n, e: jwk.e }
    await this.store.db
      .insertInto('idp_signing_keys')
      .values({ id, sealed_private_key: this.box.seal(pem), public_jwk: JSON.stringify(publicJwk), created_at: now })
      .execute()
    // The key it replaced was retired now; anything retired more than a token lifetime ago can go.
    const rows = await this.store.db.selectFrom('idp_signing_keys').select(['id', 'created_at']).orderBy('created_at', 'desc').orderBy('id', 'desc').execute()
    const expired = rows.filter((_, i) => i > 0 && rows[i - 1].created_at + this.options.idTokenTtlMs + RETIRED_MARGIN_MS < now).map((r) => r.id)
    if (expired.length) await this.store.db.deleteFrom('idp_signing_keys').where('id', 'in', expired).execute()
    await this.reload()
  }

  private async fresh(maxAgeMs = this.options.reloadMs ?? 5_000): Promise<void> {
    if (this.now() - this.loadedAt < Math.min(maxAgeMs, this.options.reloadMs ?? 5_000)) return
    await (this.loading ??= this.reload().finally(() => (this.loading = undefined)))
  }

  private async reload(): Promise<void> {
    const rows = await this.store.db.selectFrom('idp_signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute()
    const now = this.now()
    const known = new Map(this.keys.map((k) => [k.id, k]))
    this.keys = rows
      // The newest key, and older ones only while a token they signed can still be unexpired.
      .filter((r, i) => i === 0 || rows[i - 1].created_at + this.options.idTokenTtlMs + RETIRED_MARGIN_MS >= now)
      .map((r) => known.get(r.id) ?? { id: r.id, createdAt: r.created_at, publicJwk: JSON.parse(r.public_jwk) as PublicJwk, privateKey: createPrivateKey(this.box.openText(r.sealed_private_key)) })
    this.loadedAt = now
  }
}
