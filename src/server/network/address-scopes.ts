/**
 * Address scopes (extension address-scope; docs/network.md, "Subnet pools"): a scope names an address space in
 * which addresses are unique, so the subnet pools in one scope never overlap (their subnets cannot either).
 * Pools join a scope of their IP version by `address_scope_id`; a scope with pools cannot be deleted.
 */
import type { AddressScopeTable } from '../storage/schema.js'
import { cidrsOverlap, parseCidr, type Cidr } from '../../lib/ip.js'
import { can, flag, listsAllProjects, must, newUuid, parseJson, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { owningProject } from './networks.js'
import { touched } from './queries.js'
import { addressScopeView, type View } from './views.js'

export interface AddressScopeBody {
  name?: string
  ip_version?: number
  shared?: boolean
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

const scopeTarget = (s: AddressScopeTable) => ({ projectId: s.project_id, shared: s.shared === 1 })

export async function visibleAddressScope(ctx: NetCtx, actor: Actor, id: string, lock = false): Promise<AddressScopeTable> {
  const row = await ctx.db
    .selectFrom('address_scopes')
    .selectAll()
    .where('id', '=', id)
    .$if(lock && ctx.rowLocks, (q) => q.forUpdate())
    .executeTakeFirst()
  if (!row || !can(actor, 'get_address_scope', scopeTarget(row))) throw neutron.notFound('AddressScopeNotFound', `Address scope ${id} could not be found.`)
  return row
}

export async function createAddressScope(ctx: NetCtx, actor: Actor, body: AddressScopeBody): Promise<View> {
  const projectId = owningProject(actor, body)
  must(actor, 'create_address_scope', { projectId })
  if (body.shared) must(actor, 'create_address_scope:shared', { projectId })
  if (body.ip_version !== 4 && body.ip_version !== 6) throw neutron.invalidInput(`${String(body.ip_version)} is not in [4, 6]`)
  const row: AddressScopeTable = {
    id: newUuid(),
    project_id: projectId,
    name: body.name ?? '',
    ip_version: body.ip_version,
    shared: flag(body.shared, false),
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 0,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('address_scopes').values(row).execute()
  return addressScopeView(row)
}

export async function listAddressScopes(ctx: NetCtx, actor: Actor): Promise<View[]> {
  const rows = await ctx.db
    .selectFrom('address_scopes')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where((eb) => eb.or([eb('project_id', '=', actor.projectId), eb('shared', '=', 1)])))
    .execute()
  return rows.filter((r) => can(actor, 'get_address_scope', scopeTarget(r))).map(addressScopeView)
}

export async function showAddressScope(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return addressScopeView(await visibleAddressScope(ctx, actor, id))
}

export async function updateAddressScope(ctx: NetCtx, actor: Actor, id: string, body: AddressScopeBody): Promise<View> {
  const scope = await visibleAddressScope(ctx, actor, id, true)
  must(actor, 'update_address_scope', scopeTarget(scope))
  const changes: Partial<AddressScopeTable> = {}
  if (body.name !== undefined) changes.name = body.name
  if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
  if (body.shared !== undefined && flag(body.shared, false) !== scope.shared) {
    must(actor, 'update_address_scope:shared', scopeTarget(scope))
    // Other projects' pools may have joined a shared scope: it stays shared while they are in it.
    const foreign = await ctx.db.selectFrom('subnet_pools').select('id').where('address_scope_id', '=', id).where('project_id', '!=', scope.project_id).executeTakeFirst()
    if (!body.shared && foreign) throw neutron.conflict('AddressScopeInUse', `Unable to complete operation on address scope ${id}: subnet pools of other projects are in it.`)
    changes.shared = flag(body.shared, false)
  }
  await ctx.db.updateTable('address_scopes').set({ ...changes, ...touched(ctx.now, scope.revision_number) }).where('id', '=', id).execute()
  return showAddressScope(ctx, actor, id)
}

export async function deleteAddressScope(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const scope = await visibleAddressScope(ctx, actor, id, true)
  must(actor, 'delete_address_scope', scopeTarget(scope))
  const used = await ctx.db.selectFrom('subnet_pools').select('id').where('address_scope_id', '=', id).executeTakeFirst()
  if (used) throw neutron.conflict('AddressScopeInUse', `Unable to complete operation on address scope ${id}. There are one or more subnet pools in use on the address scope.`)
  await ctx.db.deleteFrom('address_scopes').where('id', '=', id).execute()
}

/**
 * Checks that a pool of `version` with `prefixes` may be in scope `scopeId` (the caller sees it, same IP version,
 * no prefix overlapping another pool of the scope); the scope is locked so two pools cannot join at once.
 */
export async function checkPoolScope(ctx: NetCtx, actor: Actor, scopeId: string, version: number, prefixes: Cidr[], poolId?: string): Promise<void> {
  const scope = await visibleAddressScope(ctx, actor, scopeId, true)
  if (scope.ip_version !== version) {
    throw neutron.invalid('IllegalSubnetPoolAssociationToAddressScope', `Illegal subnetpool association: subnetpool of IPv${version} cannot be associated with address scope ${scopeId} of IPv${scope.ip_version}.`)
  }
  const others = await ctx.db.selectFrom('subnet_pools').select(['id', 'prefixes']).where('address_scope_id', '=', scopeId).$if(poolId !== undefined, (q) => q.where('id', '!=', poolId!)).execute()
  for (const other of others) {
    for (const text of parseJson<string[]>(other.prefixes)) {
      if (prefixes.some((p) => cidrsOverlap(p, parseCidr(text)!))) {
        throw neutron.invalid('AddressScopePrefixConflict', `Failed to associate address scope: subnetpools within an address scope must have unique prefixes (${text} of subnet pool ${other.id}).`)
      }
    }
  }
}
