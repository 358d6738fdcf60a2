/**
 * First-start setup, run on every start and idempotent: domain `Default`, project and user `admin`, the roles
 * admin ⊃ member ⊃ reader, admin's assignments, region `RegionOne` and the service catalog built from the
 * public URL. Existing rows are kept; endpoints are moved when the public URL changed.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Store } from '../storage/store.js'
import { hashPassword, verifyPassword } from '../crypto/passwords.js'
import { CATALOG_SERVICES, DEFAULT_REGION, ENDPOINT_INTERFACES } from './catalog.js'
import { ADVISORY_LOCKS } from '../storage/locks.js'

export const DEFAULT_DOMAIN_ID = 'default'
export const ROLE_NAMES = ['admin', 'member', 'reader'] as const

/** Keystone-style ids: a UUID4 as 32 hex characters. */
export function newId(): string {
  return randomUUID().replaceAll('-', '')
}

export interface BootstrapResult {
  /** Set only when the admin user was created now with a generated password: print it once. */
  generatedAdminPassword?: string
  adminUserId: string
  adminProjectId: string
}

export async function bootstrap(store: Store, options: { publicUrl: string; adminPassword?: string }): Promise<BootstrapResult> {
  return store.db.transaction().execute(async (tx) => {
    // Replicas starting together on one empty PostgreSQL take turns; each later one finds the rows in place.
    // (A transaction-scoped lock, released at commit; READ COMMITTED lets the reads below see the first one's rows.)
    if (store.capabilities.advisoryLocks) await sql`SELECT pg_advisory_xact_lock(${ADVISORY_LOCKS.bootstrap})`.execute(tx)
    const now = Date.now()
    await tx
      .insertInto('domains')
      .values({ id: DEFAULT_DOMAIN_ID, name: 'Default', description: 'The default domain', enabled: 1, options: '{}', extra: '{}', created_at: now })
      .onConflict((oc) => oc.doNothing())
      .execute()

    const adminProjectId = await ensureProject(tx, 'admin', 'Bootstrap project for the cloud administrator', now)
    const roleIds = await ensureRoles(tx, now)
    const { userId, generated } = await ensureAdminUser(tx, adminProjectId, options.adminPassword, now)
    for (const [targetType, targetId] of [['project', adminProjectId], ['domain', DEFAULT_DOMAIN_ID], ['system', 'all']] as const) {
      await tx
        .insertInto('role_assignments')
        .values({ actor_type: 'user', actor_id: userId, target_type: targetType, target_id: targetId, role_id: roleIds.admin, inherited: 0 })
        .onConflict((oc) => oc.doNothing())
        .execute()
    }
    await ensureCatalog(tx, options.publicUrl)
    return { generatedAdminPassword: generated, adminUserId: userId, adminProjectId }
  })
}

async function ensureProject(tx: Db, name: string, description: string, now: number): Promise<string> {
  const existing = await tx.selectFrom('projects').select('id').where('domain_id', '=', DEFAULT_DOMAIN_ID).where('name', '=', name).executeTakeFirst()
  if (existing) return existing.id
  const id = newId()
  await tx
    .insertInto('projects')
    .values({ id, domain_id: DEFAULT_DOMAIN_ID, parent_id: DEFAULT_DOMAIN_ID, name, description, enabled: 1, options: '{}', extra: '{}', created_at: now })
    .execute()
  return id
}

async function ensureRoles(tx: Db, now: number): Promise<Record<(typeof ROLE_NAMES)[number], string>> {
  const ids = {} as Record<(typeof ROLE_NAMES)[number], string>
  for (const name of ROLE_NAMES) {
    const existing = await tx.selectFrom('roles').select('id').where('name', '=', name).where('domain_id', '=', '').executeTakeFirst()
    ids[name] = existing?.id ?? newId()
    if (!existing) await tx.insertInto('roles').values({ id: ids[name], name, domain_id: '', description: '', options: '{}', created_at: now }).execute()
  }
  // admin implies member, member implies reader: the hierarchy every policy rule relies on.
  for (const [prior, implied] of [[ids.admin, ids.member], [ids.member, ids.reader]]) {
    await tx.insertInto('implied_roles').values({ prior_role_id: prior, implied_role_id: implied }).onConflict((oc) => oc.doNothing()).execute()
  }
  return ids
}

async function ensureAdminUser(tx: Db, projectId: string, password: string | undefined, now: number) {
  const existing = await tx.selectFrom('users').select(['id', 'password_hash']).where('domain_id', '=', DEFAULT_DOMAIN_ID).where('name', '=', 'admin').executeTakeFirst()
  if (existing) {
    // Like keystone-manage bootstrap: a password given at start becomes the admin's password.
    if (password && !(existing.password_hash && (await verifyPassword(password, existing.password_hash)))) {
      await tx.updateTable('users').set({ password_hash: await hashPassword(password), password_created_at: now, failed_auth_count: 0 }).where('id', '=', existing.id).execute()
    }
    return { userId: existing.id, generated: undefined }
  }
  const generated = password ? undefined : randomBytes(18).toString('base64url')
  const id = newId()
  await tx
    .insertInto('users')
    .values({
      id, domain_id: DEFAULT_DOMAIN_ID, name: 'admin', enabled: 1, default_project_id: projectId, description: 'Bootstrap administrator',
      email: null, options: '{}', extra: '{}', password_hash: await hashPassword(password ?? generated!), password_created_at: now,
      password_expires_at: null, failed_auth_count: 0, failed_auth_at: null, last_active_at: null, created_at: now,
    })
    .execute()
  return { userId: id, generated }
}

async function ensureCatalog(tx: Db, publicUrl: string): Promise<void> {
  await tx.insertInto('regions').values({ id: DEFAULT_REGION, description: '', parent_region_id: null }).onConflict((oc) => oc.doNothing()).execute()
  for (const service of CATALOG_SERVICES) {
    const existing = await tx.selectFrom('services').select('id').where('type', '=', service.type).where('name', '=', service.name).executeTakeFirst()
    const serviceId = existing?.id ?? newId()
    if (!existing) {
      await tx.insertInto('services').values({ id: serviceId, type: service.type, name: service.name, description: service.description, enabled: 1 }).execute()
    }
    const url = publicUrl + service.path
    for (const iface of ENDPOINT_INTERFACES) {
      const endpoint = await tx.selectFrom('endpoints').select(['id', 'url']).where('service_id', '=', serviceId).where('interface', '=', iface).executeTakeFirst()
      if (!endpoint) {
        await tx.insertInto('endpoints').values({ id: newId(), service_id: serviceId, interface: iface, region_id: DEFAULT_REGION, url, enabled: 1 }).execute()
      } else if (endpoint.url !== url) {
        await tx.updateTable('endpoints').set({ url }).where('id', '=', endpoint.id).execute()
      }
    }
  }
}
