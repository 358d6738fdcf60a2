/**
 * Security groups and their rules. Every project has a `default` group, created on first use (listing
 * groups, creating a group or a port) with Neutron's default rules: all egress, and ingress from members of
 * the group itself, for IPv4 and IPv6. Rule validation follows Neutron's messages and exception names.
 */
import type { SecurityGroupRuleTable, SecurityGroupTable } from '../storage/schema.js'
import { can, listsAllProjects, must, newUuid, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import { formatIp, networkOfCidr, parseCidr } from '../../lib/ip.js'
import { owningProject } from './networks.js'
import { checkQuota } from './quotas.js'
import { rulesByGroup, touched } from './queries.js'
import { ruleView, securityGroupView, type View } from './views.js'

export interface SecurityGroupBody {
  name?: string
  description?: string
  stateful?: boolean
  project_id?: string
  tenant_id?: string
  tags?: string[]
}

export interface RuleBody {
  security_group_id?: string
  direction?: string
  ethertype?: string
  protocol?: string | number | null
  port_range_min?: number | null
  port_range_max?: number | null
  remote_ip_prefix?: string | null
  remote_group_id?: string | null
  description?: string
  project_id?: string
  tenant_id?: string
}

/** IANA protocol numbers of the names Neutron accepts. */
const PROTOCOLS: Record<string, number> = {
  ah: 51, dccp: 33, egp: 8, esp: 50, gre: 47, hopopt: 0, icmp: 1, igmp: 2, ipip: 4, 'ipv6-encap': 41, 'ipv6-frag': 44,
  'ipv6-icmp': 58, icmpv6: 58, 'ipv6-nonxt': 59, 'ipv6-opts': 60, 'ipv6-route': 43, ospf: 89, pgm: 113, rsvp: 46,
  sctp: 132, tcp: 6, udp: 17, udplite: 136, vrrp: 112,
}
const PORT_PROTOCOLS = new Set([6, 17, 132, 33, 136])
const ICMP_PROTOCOLS = new Set([1, 58])

const groupTarget = (g: SecurityGroupTable) => ({ projectId: g.project_id })

export async function visibleSecurityGroup(ctx: NetCtx, actor: Actor, id: string): Promise<SecurityGroupTable> {
  const row = await ctx.db.selectFrom('security_groups').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || !can(actor, 'get_security_group', groupTarget(row))) throw neutron.securityGroupNotFound(id)
  return row
}

function defaultRules(group: SecurityGroupTable, now: number): SecurityGroupRuleTable[] {
  const rule = (direction: string, ethertype: string, remoteGroup: string | null): SecurityGroupRuleTable => ({
    id: newUuid(),
    security_group_id: group.id,
    project_id: group.project_id,
    direction,
    ethertype,
    protocol: null,
    port_range_min: null,
    port_range_max: null,
    remote_ip_prefix: null,
    remote_group_id: remoteGroup,
    description: '',
    revision_number: 0,
    created_at: now,
    updated_at: now,
  })
  const rules = [rule('egress', 'IPv4', null), rule('egress', 'IPv6', null)]
  if (group.name === 'default') rules.push(rule('ingress', 'IPv4', group.id), rule('ingress', 'IPv6', group.id))
  return rules
}

async function insertGroup(ctx: NetCtx, projectId: string, body: SecurityGroupBody): Promise<SecurityGroupTable> {
  const row: SecurityGroupTable = {
    id: newUuid(),
    project_id: projectId,
    name: body.name ?? '',
    description: body.description ?? '',
    stateful: body.stateful === false ? 0 : 1,
    tags: JSON.stringify(body.tags ?? []),
    revision_number: 1,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('security_groups').values(row).execute()
  await ctx.db.insertInto('security_group_rules').values(defaultRules(row, ctx.now)).execute()
  return row
}

/**
 * The project's `default` group id, created now if the project has none. Concurrent first uses agree on one
 * group: the claim row's primary key decides, and the loser removes the group it had started.
 */
export async function ensureDefaultSecurityGroup(ctx: NetCtx, projectId: string): Promise<string> {
  if (projectId === '') throw neutron.invalidInput('a project is needed for its default security group')
  const existing = await ctx.db.selectFrom('default_security_groups').select('security_group_id').where('project_id', '=', projectId).executeTakeFirst()
  if (existing) return existing.security_group_id
  const group = await insertGroup(ctx, projectId, { name: 'default', description: 'Default security group' })
  const claim = await ctx.db
    .insertInto('default_security_groups')
    .values({ project_id: projectId, security_group_id: group.id })
    .onConflict((oc) => oc.column('project_id').doNothing())
    .executeTakeFirst()
  if (Number(claim.numInsertedOrUpdatedRows ?? 0n) === 1) return group.id
  await ctx.db.deleteFrom('security_groups').where('id', '=', group.id).execute()
  const winner = await ctx.db.selectFrom('default_security_groups').select('security_group_id').where('project_id', '=', projectId).executeTakeFirstOrThrow()
  return winner.security_group_id
}

export async function renderGroups(ctx: NetCtx, rows: SecurityGroupTable[]): Promise<View[]> {
  const rules = await rulesByGroup(ctx.db, rows.map((r) => r.id))
  return rows.map((r) => securityGroupView(r, rules.get(r.id) ?? []))
}

export async function listSecurityGroups(ctx: NetCtx, actor: Actor): Promise<View[]> {
  if (actor.projectId) await ensureDefaultSecurityGroup(ctx, actor.projectId)
  const rows = await ctx.db
    .selectFrom('security_groups')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where('project_id', '=', actor.projectId))
    .execute()
  return renderGroups(ctx, rows)
}

export async function createSecurityGroup(ctx: NetCtx, actor: Actor, body: SecurityGroupBody): Promise<View> {
  const projectId = owningProject(actor, body)
  must(actor, 'create_security_group', { projectId })
  await ensureDefaultSecurityGroup(ctx, projectId)
  if (body.name === 'default') throw neutron.securityGroupDefaultAlreadyExists()
  await checkQuota(ctx.db, projectId, 'security_group')
  const row = await insertGroup(ctx, projectId, body)
  return (await renderGroups(ctx, [row]))[0]
}

export async function showSecurityGroup(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return (await renderGroups(ctx, [await visibleSecurityGroup(ctx, actor, id)]))[0]
}

export async function updateSecurityGroup(ctx: NetCtx, actor: Actor, id: string, body: SecurityGroupBody): Promise<View> {
  const row = await visibleSecurityGroup(ctx, actor, id)
  must(actor, 'update_security_group', groupTarget(row))
  // Neutron: the name 'default' is taken by the project's default group (409, as on create); the default group
  // itself cannot be renamed (400).
  if (body.name === 'default' && row.name !== 'default') throw neutron.securityGroupDefaultAlreadyExists()
  if (body.name !== undefined && body.name !== row.name && row.name === 'default') {
    throw neutron.invalid('SecurityGroupCannotUpdateDefault', 'Updating default security group not allowed.')
  }
  if (body.stateful !== undefined && body.stateful !== (row.stateful === 1)) {
    const inUse = await ctx.db.selectFrom('port_security_groups').select('port_id').where('security_group_id', '=', id).executeTakeFirst()
    if (inUse) throw neutron.securityGroupInUse(id)
  }
  await ctx.db
    .updateTable('security_groups')
    .set({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.stateful !== undefined ? { stateful: body.stateful ? 1 : 0 } : {}),
      ...(body.tags !== undefined ? { tags: JSON.stringify(body.tags) } : {}),
      ...touched(ctx.now, row.revision_number),
    })
    .where('id', '=', id)
    .execute()
  return showSecurityGroup(ctx, actor, id)
}

export async function deleteSecurityGroup(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const row = await visibleSecurityGroup(ctx, actor, id)
  must(actor, 'delete_security_group', groupTarget(row))
  const isDefault = await ctx.db.selectFrom('default_security_groups').select('project_id').where('security_group_id', '=', id).executeTakeFirst()
  if (isDefault && !can(actor, 'delete_security_group:default', groupTarget(row))) throw neutron.securityGroupCannotRemoveDefault()
  const inUse = await ctx.db.selectFrom('port_security_groups').select('port_id').where('security_group_id', '=', id).executeTakeFirst()
  if (inUse) throw neutron.securityGroupInUse(id)
  await ctx.db.deleteFrom('default_security_groups').where('security_group_id', '=', id).execute()
  await ctx.db.deleteFrom('security_groups').where('id', '=', id).execute()
}

// ---- rules ----

function normalizeProtocol(protocol: RuleBody['protocol']): { text: string | null; number: number | null } {
  if (protocol === null || protocol === undefined || protocol === 'any') return { text: null, number: null }
  const text = String(protocol).toLowerCase()
  if (/^\d+$/.test(text)) {
    const n = Number(text)
    if (n > 255) throw neutron.invalid('SecurityGroupRuleInvalidProtocol', `Security group rule protocol ${text} not supported. Only protocol values [${Object.keys(PROTOCOLS).join(', ')}] and integer representations [0 to 255] are supported.`)
    return { text, number: n }
  }
  if (!(text in PROTOCOLS)) {
    throw neutron.invalid('SecurityGroupRuleInvalidProtocol', `Security group rule protocol ${text} not supported. Only protocol values [${Object.keys(PROTOCOLS).join(', ')}] and integer representations [0 to 255] are supported.`)
  }
  return { text, number: PROTOCOLS[text] }
}

function validatePorts(protocol: { text: string | null; number: number | null }, min: number | null, max: number | null): [number | null, number | null] {
  if (min === null && max === null) return [null, null]
  // Neutron converts both values first, whatever the protocol: beyond 0–65535 is no port at all.
  for (const p of [min, max]) if (p !== null && (p < 0 || p > 65535)) throw neutron.invalid('SecurityGroupInvalidPortValue', `Invalid value for port ${p}`)
  if (protocol.number === null) throw neutron.invalid('SecurityGroupProtocolRequiredWithPorts', 'Must also specify protocol if port range is given.')
  if (PORT_PROTOCOLS.has(protocol.number)) {
    if (min === null || max === null) throw neutron.invalid('SecurityGroupInvalidPortRange', 'For TCP/UDP protocols, port_range_min must be <= port_range_max')
    for (const p of [min, max]) if (p < 1 || p > 65535) throw neutron.invalid('SecurityGroupInvalidPortValue', `Invalid value for port ${p}`)
    if (min > max) throw neutron.invalid('SecurityGroupInvalidPortRange', 'For TCP/UDP protocols, port_range_min must be <= port_range_max')
    return [min, max]
  }
  if (ICMP_PROTOCOLS.has(protocol.number)) {
    if (min === null && max !== null) throw neutron.invalid('SecurityGroupMissingIcmpType', `ICMP code (port-range-max) ${max} is provided but ICMP type (port-range-min) is missing.`)
    for (const [field, v] of [['type', min], ['code', max]] as const) {
      if (v !== null && (v < 0 || v > 255)) throw neutron.invalid('SecurityGroupInvalidIcmpValue', `Invalid value for ICMP ${field} (port-range-${field === 'type' ? 'min' : 'max'}): ${v}. It must be 0 to 255.`)
    }
    return [min, max]
  }
  throw neutron.invalid('SecurityGroupInvalidProtocolForPortRange', `Invalid protocol ${protocol.text} for port range, only supported for TCP, UDP, UDPLITE, SCTP and DCCP.`)
}

/**
 * A rule's remote prefix as Neutron keeps it: the text as sent, host bits included (10.2.3.124/24 stays so),
 * with the address in canonical form and a bare address given its full length. Matching reads the network it
 * names (`networkOfCidr`): duplicates here, the nftables rules on hosts (dataplane/host-state.ts).
 */
function remotePrefix(prefix: string | null | undefined, ethertype: string): string | null {
  if (prefix === null || prefix === undefined) return null
  const cidr = parseCidr(prefix.includes('/') ? prefix : `${prefix}/${prefix.includes(':') ? 128 : 32}`)
  if (!cidr) throw neutron.invalidInput(`'${prefix}' is not a valid IP subnet.`)
  if (`IPv${cidr.version}` !== ethertype) {
    throw neutron.invalid('SecurityGroupRuleParameterConflict', `Conflicting value ethertype ${ethertype} for CIDR ${prefix}`)
  }
  return `${formatIp(cidr.version, cidr.address)}/${cidr.prefix}`
}

/** Neutron treats "any address" (0.0.0.0/0, ::/0) and no prefix as the same rule, and compares the networks named. */
const sameRemote = (a: string | null, b: string | null) => {
  const network = (p: string | null) => (p === null || p.endsWith('/0') ? null : networkOfCidr(p))
  return network(a) === network(b)
}

export async function createRule(ctx: NetCtx, actor: Actor, body: RuleBody): Promise<View> {
  if (body.security_group_id === undefined) throw neutron.badRequest('security_group_rule', "'security_group_id' is required")
  if (body.direction === undefined) throw neutron.badRequest('security_group_rule', "'direction' is required")
  const group = await visibleSecurityGroup(ctx, actor, body.security_group_id)
  const projectId = body.project_id ?? body.tenant_id ?? group.project_id
  if (projectId !== group.project_id) must(actor, 'create:other_project', { projectId })
  must(actor, 'create_security_group_rule', groupTarget(group))
  const ethertype = body.ethertype ?? 'IPv4'
  if (body.remote_ip_prefix != null && body.remote_group_id != null) {
    throw neutron.invalid('SecurityGroupRemoteGroupAndRemoteIpPrefix', 'Only remote_ip_prefix or remote_group_id may be provided.')
  }
  const protocol = normalizeProtocol(body.protocol)
  const [min, max] = validatePorts(protocol, body.port_range_min ?? null, body.port_range_max ?? null)
  const prefix = remotePrefix(body.remote_ip_prefix, ethertype)
  if (body.remote_group_id != null) await visibleSecurityGroup(ctx, actor, body.remote_group_id)
  const existing = await ctx.db.selectFrom('security_group_rules').selectAll().where('security_group_id', '=', group.id).execute()
  const duplicate = existing.find(
    (r) =>
      r.direction === body.direction &&
      r.ethertype === ethertype &&
      r.protocol === protocol.text &&
      r.port_range_min === min &&
      r.port_range_max === max &&
      sameRemote(r.remote_ip_prefix, prefix) &&
      r.remote_group_id === (body.remote_group_id ?? null),
  )
  if (duplicate) throw neutron.securityGroupRuleExists(duplicate.id)
  await checkQuota(ctx.db, group.project_id, 'security_group_rule')
  const row: SecurityGroupRuleTable = {
    id: newUuid(),
    security_group_id: group.id,
    project_id: group.project_id,
    direction: body.direction,
    ethertype,
    protocol: protocol.text,
    port_range_min: min,
    port_range_max: max,
    remote_ip_prefix: prefix,
    remote_group_id: body.remote_group_id ?? null,
    description: body.description ?? '',
    revision_number: 0,
    created_at: ctx.now,
    updated_at: ctx.now,
  }
  await ctx.db.insertInto('security_group_rules').values(row).execute()
  await ctx.db.updateTable('security_groups').set(touched(ctx.now, group.revision_number)).where('id', '=', group.id).execute()
  return ruleView(row)
}

async function visibleRule(ctx: NetCtx, actor: Actor, id: string): Promise<SecurityGroupRuleTable> {
  const row = await ctx.db.selectFrom('security_group_rules').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row || !can(actor, 'get_security_group_rule', { projectId: row.project_id })) throw neutron.securityGroupRuleNotFound(id)
  return row
}

export async function listRules(ctx: NetCtx, actor: Actor): Promise<View[]> {
  if (actor.projectId) await ensureDefaultSecurityGroup(ctx, actor.projectId)
  const rows = await ctx.db
    .selectFrom('security_group_rules')
    .selectAll()
    .$if(!listsAllProjects(actor), (q) => q.where('project_id', '=', actor.projectId))
    .execute()
  return rows.map(ruleView)
}

export async function showRule(ctx: NetCtx, actor: Actor, id: string): Promise<View> {
  return ruleView(await visibleRule(ctx, actor, id))
}

export async function deleteRule(ctx: NetCtx, actor: Actor, id: string): Promise<void> {
  const row = await visibleRule(ctx, actor, id)
  must(actor, 'delete_security_group_rule', { projectId: row.project_id })
  await ctx.db.deleteFrom('security_group_rules').where('id', '=', id).execute()
}

/** Resolves names or ids of groups of a project (Nova passes names; openstackclient ids in the name field). */
export async function resolveSecurityGroups(ctx: NetCtx, projectId: string, refs: string[]): Promise<string[]> {
  const ids: string[] = []
  for (const ref of refs) {
    if (ref === 'default') {
      ids.push(await ensureDefaultSecurityGroup(ctx, projectId))
      continue
    }
    const byId = await ctx.db.selectFrom('security_groups').select('id').where('id', '=', ref).where('project_id', '=', projectId).executeTakeFirst()
    const byName = byId ? [byId] : await ctx.db.selectFrom('security_groups').select('id').where('name', '=', ref).where('project_id', '=', projectId).execute()
    if (byName.length === 0) throw neutron.securityGroupNotFound(ref)
    if (byName.length > 1) throw neutron.conflict('DuplicateSecurityGroupName', `Multiple security groups named ${ref} exist in the project; use an id.`)
    if (!ids.includes(byName[0].id)) ids.push(byName[0].id)
  }
  return ids
}

