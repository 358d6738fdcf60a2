/**
 * Access rules: a user's rules, named by its application credentials. The same rule (service, method, path) is
 * one row per user, shared by every credential that asks for it; a rule outlives its credentials and is deleted
 * on its own, once no credential names it (Keystone's model).
 */
import { forbidden, notFound } from '../../../contracts/errors.js'
import type { AccessRuleTable } from '../../storage/tables/identity-auth.js'
import type { Db } from '../../storage/store.js'
import type { AccessRule } from '../access-rules.js'
import { newIdentityId, parseJson } from './write.js'

export type AccessRuleRow = AccessRuleTable

/** What a credential asks for: an existing rule of the user by id, or a rule by its fields. */
export type AccessRuleRequest = { id: string } | AccessRule

export interface AccessRuleFilter {
  service?: string
  method?: string
  path?: string
}

export async function listUserAccessRules(db: Db, userId: string, filter: AccessRuleFilter = {}): Promise<AccessRuleRow[]> {
  let q = db.selectFrom('access_rules').selectAll().where('user_id', '=', userId)
  if (filter.service !== undefined) q = q.where('service', '=', filter.service)
  if (filter.method !== undefined) q = q.where('method', '=', filter.method)
  if (filter.path !== undefined) q = q.where('path', '=', filter.path)
  return q.orderBy('created_at', 'asc').orderBy('id', 'asc').execute()
}

/** One of the user's access rules, else 404 (another user's rule does not exist for this one). */
export async function getUserAccessRule(db: Db, userId: string, id: string): Promise<AccessRuleRow> {
  const row = await db.selectFrom('access_rules').selectAll().where('user_id', '=', userId).where('id', '=', id).executeTakeFirst()
  if (!row) throw notFound(`Could not find access rule: ${id}.`)
  return row
}

/** The rows of the ids, in the order given (for rendering a credential). */
export async function accessRulesByIds(db: Db, ids: readonly string[]): Promise<AccessRuleRow[]> {
  if (ids.length === 0) return []
  const rows = await db.selectFrom('access_rules').selectAll().where('id', 'in', [...ids]).execute()
  const byId = new Map(rows.map((r) => [r.id, r]))
  return ids.map((id) => byId.get(id)).filter((r): r is AccessRuleRow => r !== undefined)
}

/** The ids of the rules a new credential asks for: the user's existing rules, made when new. Runs in the credential's transaction. */
export async function resolveAccessRules(tx: Db, userId: string, wanted: readonly AccessRuleRequest[], now: number): Promise<string[]> {
  const ids: string[] = []
  for (const rule of wanted) {
    if ('id' in rule) {
      ids.push((await getUserAccessRule(tx, userId, rule.id)).id)
      continue
    }
    const existing = await tx
      .selectFrom('access_rules')
      .select('id')
      .where('user_id', '=', userId)
      .where('service', '=', rule.service)
      .where('method', '=', rule.method)
      .where('path', '=', rule.path)
      .executeTakeFirst()
    if (existing) {
      ids.push(existing.id)
      continue
    }
    const id = newIdentityId()
    await tx.insertInto('access_rules').values({ id, user_id: userId, service: rule.service, method: rule.method, path: rule.path, created_at: now }).execute()
    ids.push(id)
  }
  return [...new Set(ids)]
}

/** Deletes a rule of the user; a rule one of its application credentials still names is refused (403, as Keystone). */
export async function deleteUserAccessRule(db: Db, userId: string, id: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const rule = await getUserAccessRule(tx, userId, id)
    const creds = await tx.selectFrom('application_credentials').select(['id', 'access_rule_ids']).where('user_id', '=', userId).execute()
    const user = creds.find((c) => parseJson<string[]>(c.access_rule_ids, []).includes(rule.id))
    if (user) throw forbidden(`The access rule ${rule.id} is in use by application credential ${user.id}.`)
    await tx.deleteFrom('access_rules').where('id', '=', rule.id).execute()
  })
}
