/**
 * The IdP's OAuth2 clients and their secrets. The `kubernetes` client is created at start (idempotent); its
 * secret is random, sealed with the master key, readable through GET /resmgr/v2/idpclients. Rotation keeps the
 * previous secret valid for a grace period, so kubeconfigs written with it keep refreshing while users update.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { Store } from '../storage/store.js'

export const KUBERNETES_CLIENT_ID = 'kubernetes'
/** Clients created at start. */
export const BUILTIN_CLIENTS = [KUBERNETES_CLIENT_ID] as const

const newSecret = () => randomBytes(24).toString('base64url')

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export class IdpClients {
  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly options: { graceMs: number; now?: () => number },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** Creates the built-in clients that do not exist yet; existing secrets are kept. */
  async ensureBuiltins(): Promise<void> {
    for (const id of BUILTIN_CLIENTS) {
      await this.store.db
        .insertInto('idp_clients')
        .values({ id, sealed_secret: this.box.seal(newSecret()), previous_sealed_secret: null, previous_valid_until: null, created_at: this.now(), rotated_at: null })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute()
    }
  }

  /** client_id → current secret. */
  async secrets(): Promise<Record<string, string>> {
    const rows = await this.store.db.selectFrom('idp_clients').select(['id', 'sealed_secret']).orderBy('id').execute()
    return Object.fromEntries(rows.map((r) => [r.id, this.box.openText(r.sealed_secret)]))
  }

  /** True when the secret is the client's current one, or its previous one within the grace period. */
  async verify(clientId: string, secret: string): Promise<boolean> {
    const row = await this.store.db.selectFrom('idp_clients').selectAll().where('id', '=', clientId).executeTakeFirst()
    if (!row) return false
    if (sameSecret(this.box.openText(row.sealed_secret), secret)) return true
    return row.previous_sealed_secret !== null && (row.previous_valid_until ?? 0) > this.now() && sameSecret(this.box.openText(row.previous_sealed_secret), secret)
  }

  async exists(clientId: string): Promise<boolean> {
    return (await this.store.db.selectFrom('idp_clients').select('id').where('id', '=', clientId).executeTakeFirst()) !== undefined
  }

  /** Replaces the secret; the old one stays valid for the grace period. Returns the new secret. */
  async rotate(clientId: string): Promise<{ secret: string; previousValidUntil: number }> {
    return this.store.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('idp_clients').select(['id', 'sealed_secret']).where('id', '=', clientId).executeTakeFirst()
      if (!row) throw new AppError('not_found', `Could not find IdP client: ${clientId}.`)
      const secret = newSecret()
      const now = this.now()
      const previousValidUntil = now + this.options.graceMs
      await tx
        .updateTable('idp_clients')
        .set({ sealed_secret: this.box.seal(secret), previous_sealed_secret: row.sealed_secret, previous_valid_until: previousValidUntil, rotated_at: now })
        .where('id', '=', clientId)
        .execute()
      return { secret, previousValidUntil }
    })
  }
}
