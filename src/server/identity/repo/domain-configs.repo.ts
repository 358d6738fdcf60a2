/**
 * Domain configurations: one row per configured domain, the answered options as JSON and the sensitive ones
 * (the LDAP password) sealed with the master key. A configuration left empty is no row.
 */
import type { SecretBox } from '../../crypto/secret-box.js'
import type { Db } from '../../storage/store.js'
import { type DomainConfig, mergeConfig, splitSensitive } from '../domain-config.js'
import { parseJson } from './write.js'

/** The domain's whole configuration (sensitive options included), or undefined when it has none. */
export async function getDomainConfig(db: Db, box: SecretBox, domainId: string): Promise<DomainConfig | undefined> {
  const row = await db.selectFrom('domain_configs').selectAll().where('domain_id', '=', domainId).executeTakeFirst()
  if (!row) return undefined
  const sensitive = row.sensitive ? parseJson<DomainConfig>(box.openText(row.sensitive), {}) : {}
  return mergeConfig(parseJson<DomainConfig>(row.config, {}), sensitive)
}

/**
 * Replaces the domain's configuration (an empty one removes it). Runs read-modify-write callers' writes in one
 * transaction: `change` gets the current configuration and answers the new one.
 */
export async function changeDomainConfig(
  db: Db,
  box: SecretBox,
  domainId: string,
  change: (current: DomainConfig | undefined) => DomainConfig,
  now: number,
): Promise<{ config: DomainConfig; existed: boolean }> {
  return db.transaction().execute(async (tx) => {
    const current = await getDomainConfig(tx, box, domainId)
    const next = change(current)
    const { open, sensitive } = splitSensitive(next)
    const values = { config: JSON.stringify(open), sensitive: Object.keys(sensitive).length > 0 ? box.seal(JSON.stringify(sensitive)) : null, updated_at: now }
    if (Object.keys(next).length === 0) await tx.deleteFrom('domain_configs').where('domain_id', '=', domainId).execute()
    else if (current) await tx.updateTable('domain_configs').set(values).where('domain_id', '=', domainId).execute()
    else await tx.insertInto('domain_configs').values({ domain_id: domainId, ...values }).execute()
    return { config: next, existed: current !== undefined }
  })
}
