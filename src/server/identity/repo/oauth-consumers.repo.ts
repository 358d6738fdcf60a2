/** OAuth 1.0a consumers (Keystone's OS-OAUTH1): a description and a secret, sealed at rest by the caller. */
import { notFound } from '../../../contracts/errors.js'
import type { OAuthConsumerTable } from '../../storage/tables/identity.js'
import type { Db } from '../../storage/store.js'
import { touchIdentity } from '../generation.js'
import { type Extra, newIdentityId } from './write.js'

export type OAuthConsumerRow = OAuthConsumerTable

export async function listOAuthConsumers(db: Db): Promise<OAuthConsumerRow[]> {
  return db.selectFrom('oauth_consumers').selectAll().orderBy('created_at', 'asc').orderBy('id', 'asc').execute()
}

export async function getOAuthConsumer(db: Db, id: string): Promise<OAuthConsumerRow> {
  const row = await db.selectFrom('oauth_consumers').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find consumer: ${id}.`)
  return row
}

export async function createOAuthConsumer(db: Db, input: { description: string | null; sealedSecret: string; extra: Extra }, now: number): Promise<OAuthConsumerRow> {
  const row: OAuthConsumerRow = { id: newIdentityId(), description: input.description, secret: input.sealedSecret, extra: JSON.stringify(input.extra), created_at: now }
  await db.insertInto('oauth_consumers').values(row).execute()
  return row
}

export async function updateOAuthConsumer(db: Db, id: string, input: { description?: string | null; extra: Extra }): Promise<OAuthConsumerRow> {
  const row = await getOAuthConsumer(db, id)
  const next: OAuthConsumerRow = {
    ...row,
    description: input.description === undefined ? row.description : input.description,
    extra: JSON.stringify({ ...(JSON.parse(row.extra) as Extra), ...input.extra }),
  }
  await db.updateTable('oauth_consumers').set(next).where('id', '=', id).execute()
  return next
}

export async function deleteOAuthConsumer(db: Db, id: string): Promise<void> {
  await getOAuthConsumer(db, id)
  // Its request and access tokens go with it (Keystone does the same); the keystone tokens made from its access
  // tokens end with them, so the identity generation moves.
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('oauth_request_tokens').where('consumer_id', '=', id).execute()
    await tx.deleteFrom('oauth_access_tokens').where('consumer_id', '=', id).execute()
    await tx.deleteFrom('oauth_nonces').where('consumer_id', '=', id).execute()
    await tx.deleteFrom('oauth_consumers').where('id', '=', id).execute()
    await touchIdentity(tx)
  })
}
