/**
 * The IdP's OAuth2 clients. The `kubernetes` client is created at start (idempotent); admins register more
 * (a Grafana or Argo CD of the same cloud) through the resource manager. A confidential client has a random
 * secret, sealed with the master key; rotation keeps the previous secret valid for a grace period, so
 * kubeconfigs written with it keep refreshing while users update. A public client (RFC 6749 §2.1: a native
 * or browser app that cannot keep a secret) has none and authenticates by PKCE alone.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import type { SecretBox } from '../crypto/secret-box.js'
import type { IdpClientTable } from '../storage/schema.js'
import type { Store } from '../storage/store.js'
import { OOB_URI, redirectUriProblem } from './redirect-uris.js'

export const KUBERNETES_CLIENT_ID = 'kubernetes'

/** Clients created at start: kubelogin and kubectl on the user's machine use the loopback (any port) and OOB. */
const BUILTIN_CLIENTS: NewClient[] = [
  { id: KUBERNETES_CLIENT_ID, name: 'Kubernetes', redirectUris: ['http://localhost', 'http://127.0.0.1', 'http://[::1]', OOB_URI], public: false },
]

export const isBuiltinClient = (id: string) => BUILTIN_CLIENTS.some((c) => c.id === id)

export interface IdpClient {
  id: string
  name: string
  redirectUris: string[]
  public: boolean
  builtin: boolean
  createdAt: number
  rotatedAt: number | null
}

export interface NewClient {
  /** Generated when omitted. */
  id?: string
  name: string
  redirectUris: string[]
  public?: boolean
}

export interface ClientChanges {
  name?: string
  redirectUris?: string[]
}

const CLIENT_ID = /^[A-Za-z0-9._~-]{1,64}$/
const MAX_REDIRECT_URIS = 20

const newSecret = () => randomBytes(24).toString('base64url')

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const invalid = (message: string) => new AppError('bad_request', message)

function checkRedirectUris(uris: string[]): string[] {
  if (uris.length === 0) throw invalid('A client needs at least one redirect URI.')
  if (uris.length > MAX_REDIRECT_URIS) throw invalid(`A client has at most ${MAX_REDIRECT_URIS} redirect URIs.`)
  for (const uri of uris) {
    const problem = redirectUriProblem(uri)
    if (problem) throw invalid(`Invalid redirect URI: ${problem}.`)
  }
  return [...new Set(uris)]
}

function checkName(name: string): string {
  const trimmed = name.trim()
  if (trimmed.length === 0 || trimmed.length > 255) throw invalid('A client name has 1 to 255 characters.')
  return trimmed
}

function toClient(row: IdpClientTable): IdpClient {
  return {
    id: row.id,
    name: row.name || row.id,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    public: row.public === 1,
    builtin: isBuiltinClient(row.id),
    createdAt: row.created_at,
    rotatedAt: row.rotated_at,
  }
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

  /** Creates the built-in clients that do not exist yet; existing ones (secret, redirect URIs) are kept. */
  async ensureBuiltins(): Promise<void> {
    for (const client of BUILTIN_CLIENTS) {
      await this.store.db.insertInto('idp_clients').values(this.newRow(client, newSecret())).onConflict((oc) => oc.column('id').doNothing()).execute()
    }
  }

  private newRow(client: NewClient, secret: string | undefined): IdpClientTable {
    return {
      id: client.id!,
      name: client.name,
      redirect_uris: JSON.stringify(client.redirectUris),
      public: client.public ? 1 : 0,
      // A public client's column holds a sealed empty string: no secret matches it (authenticate()).
      sealed_secret: this.box.seal(secret ?? ''),
      previous_sealed_secret: null,
      previous_valid_until: null,
      created_at: this.now(),
      rotated_at: null,
    }
  }

  /** client_id → current secret ('' for a public client), of every client or of the built-in ones only. */
  async secrets(which: 'all' | 'builtin'): Promise<Record<string, string>> {
    const rows = await this.store.db.selectFrom('idp_clients').select(['id', 'sealed_secret', 'public']).orderBy('id').execute()
    return Object.fromEntries(rows.filter((r) => which === 'all' || isBuiltinClient(r.id)).map((r) => [r.id, r.public ? '' : this.box.openText(r.sealed_secret)]))
  }

  async get(clientId: string): Promise<IdpClient | undefined> {
    const row = await this.store.db.selectFrom('idp_clients').selectAll().where('id', '=', clientId).executeTakeFirst()
    return row ? toClient(row) : undefined
  }

  /** The current secret of a confidential client (for the admin who reads one client). */
  async secretOf(clientId: string): Promise<string | undefined> {
    const row = await this.store.db.selectFrom('idp_clients').select(['sealed_secret', 'public']).where('id', '=', clientId).executeTakeFirst()
    return row && !row.public ? this.box.openText(row.sealed_secret) : undefined
  }

  /**
   * The client when the credentials identify it: a confidential client by its current secret, or its previous
   * one within the grace period; a public client by its id alone (no secret, or an empty one). Undefined otherwise.
   */
  async authenticate(clientId: string, secret: string | undefined): Promise<IdpClient | undefined> {
    const row = await this.store.db.selectFrom('idp_clients').selectAll().where('id', '=', clientId).executeTakeFirst()
    if (!row) return undefined
    if (row.public) return secret === undefined || secret === '' ? toClient(row) : undefined
    if (secret === undefined || secret === '') return undefined
    if (sameSecret(this.box.openText(row.sealed_secret), secret)) return toClient(row)
    const previousOk = row.previous_sealed_secret !== null && (row.previous_valid_until ?? 0) > this.now() && sameSecret(this.box.openText(row.previous_sealed_secret), secret)
    return previousOk ? toClient(row) : undefined
  }

  /** Registers a client; returns it with its secret (undefined for a public client). 409 when the id is taken. */
  async register(input: NewClient): Promise<{ client: IdpClient; secret: string | undefined }> {
    const id = input.id ?? randomBytes(8).toString('hex')
    if (!CLIENT_ID.test(id)) throw invalid('A client id has 1 to 64 characters from A-Z a-z 0-9 . _ ~ -.')
    const client: NewClient = { id, name: checkName(input.name), redirectUris: checkRedirectUris(input.redirectUris), public: input.public ?? false }
    const secret = client.public ? undefined : newSecret()
    const inserted = await this.store.db.insertInto('idp_clients').values(this.newRow(client, secret)).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst()
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) throw new AppError('conflict', `An IdP client with id ${id} exists already.`)
    return { client: (await this.get(id))!, secret }
  }

  /** Changes a client's name or redirect URIs (the built-in ones included). */
  async update(clientId: string, changes: ClientChanges): Promise<IdpClient> {
    const set: Partial<IdpClientTable> = {}
    if (changes.name !== undefined) set.name = checkName(changes.name)
    if (changes.redirectUris !== undefined) set.redirect_uris = JSON.stringify(checkRedirectUris(changes.redirectUris))
    if (Object.keys(set).length > 0) await this.store.db.updateTable('idp_clients').set(set).where('id', '=', clientId).execute()
    const client = await this.get(clientId)
    if (!client) throw notFound(clientId)
    return client
  }

  /** Deletes a registered client and everything issued to it. The built-in clients cannot be deleted. */
  async remove(clientId: string): Promise<void> {
    if (isBuiltinClient(clientId)) throw new AppError('conflict', `The built-in IdP client ${clientId} cannot be deleted.`)
    await this.store.db.transaction().execute(async (tx) => {
      const deleted = await tx.deleteFrom('idp_clients').where('id', '=', clientId).executeTakeFirst()
      if (Number(deleted.numDeletedRows) !== 1) throw notFound(clientId)
      for (const table of ['idp_refresh_tokens', 'idp_access_tokens', 'idp_auth_codes', 'idp_device_requests', 'idp_auth_requests'] as const) {
        await tx.deleteFrom(table).where('client_id', '=', clientId).execute()
      }
    })
  }

  /** Replaces the secret; the old one stays valid for the grace period. Returns the new secret. */
  async rotate(clientId: string): Promise<{ secret: string; previousValidUntil: number }> {
    return this.store.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('idp_clients').select(['id', 'sealed_secret', 'public']).where('id', '=', clientId).executeTakeFirst()
      if (!row) throw notFound(clientId)
      if (row.public) throw new AppError('conflict', `The IdP client ${clientId} is public: it has no secret to rotate.`)
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

const notFound = (clientId: string) => new AppError('not_found', `Could not find IdP client: ${clientId}.`)
