/**
 * Nova's security group proxies, `/os-security-groups` and `/os-security-group-rules` (2.1–2.35; 404 from 2.36,
 * where Nova removed them): the network service's security groups in Nova's shape, every call made with the
 * caller's principal. As Nova's Neutron driver: only ingress rules show, a Neutron conflict is a 400, an unknown
 * group a 404, a delete answers 202.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, badRequest, notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import * as groups from '../../network/security-groups.js'
import type { View } from '../../network/views.js'
import type { Actor, NetCtx } from '../../network/context.js'
import { parseCidr } from '../../../lib/ip.js'
import { novaSecurityGroup, type NovaRuleSource } from '../../compute/server-network.js'
import { bodyObject, callerOf, can, requireBefore } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, PROXY } from '../../../contracts/compute/answers.js'
import { acceptedIn, envelope, listOf, Q, queryOf, type JsonSchema } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

type P1 = { Params: { id: string } }

/** The bodies as property() and neutronRule() check them (by hand, with Nova's messages). */
const groupText = { type: 'string', minLength: 1, maxLength: 255, pattern: '\\S' }
const groupBody = (required: string[]): JsonSchema =>
  acceptedIn({ type: 'object', properties: { security_group: { type: 'object', properties: { name: groupText, description: groupText }, required } }, required: ['security_group'] }, PROXY.versions)
const ruleBody = acceptedIn(
  {
    type: 'object',
    properties: {
      security_group_rule: {
        type: 'object',
        properties: {
          parent_group_id: { type: 'string', format: 'uuid' },
          ip_protocol: { type: ['string', 'null'], description: 'tcp, udp, icmp or a protocol number; null for any' },
          from_port: { type: ['integer', 'null'], description: 'TCP/UDP 1–65535; an ICMP type, -1 for any' },
          to_port: { type: ['integer', 'null'], description: 'TCP/UDP 1–65535; an ICMP code, -1 for any' },
          cidr: { type: 'string', description: 'the remote addresses (default 0.0.0.0/0)' },
          group_id: { type: ['string', 'null'], format: 'uuid', description: 'the remote group, instead of a CIDR' },
        },
        required: ['parent_group_id'],
      },
    },
    required: ['security_group_rule'],
  },
  PROXY.versions,
)
const groupAnswer = envelope('security_group', A.securityGroup)
const DOCS = {
  list: documented({ summary: `List the project's security groups (all projects' for an admin with all_tenants)${PROXY.summary}`, querystring: queryOf({ all_tenants: Q.bool }), response: { 200: envelope('security_groups', listOf(A.securityGroup)) } }),
  show: documented({ summary: `Show a security group with its ingress rules${PROXY.summary}`, response: { 200: groupAnswer } }),
  create: documented({ summary: `Create a security group${PROXY.summary}`, body: groupBody(['name']), response: { 200: groupAnswer } }),
  update: documented({ summary: `Rename a security group or change its description${PROXY.summary}`, body: groupBody(['name', 'description']), response: { 200: groupAnswer } }),
  delete: documented({ summary: `Delete a security group (not the default one)${PROXY.summary}`, response: { 202: noBody('Deleted') } }),
  createRule: documented({ summary: `Add an ingress rule to a security group${PROXY.summary}`, body: ruleBody, response: { 200: envelope('security_group_rule', A.securityGroupRule) } }),
  deleteRule: documented({ summary: `Delete a security group rule${PROXY.summary}`, response: { 202: noBody('Deleted') } }),
}

/** Nova's checks of a group's name or description: a non-empty string (not only spaces) of at most 255 characters. */
function property(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 255) throw badRequest(`Security group ${what} must be a string of 1 to 255 characters, not only spaces.`)
  return value
}

const UUID_LIKE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i

/** Nova's rule body in Neutron's terms (direction ingress; ports per protocol, -1 meaning any for ICMP). */
function neutronRule(r: Record<string, unknown>): groups.RuleBody {
  // Nova's Neutron driver refuses a group id that is not a UUID before asking (400, not 404).
  for (const field of ['parent_group_id', 'group_id'] as const) {
    const id = r[field]
    if ((field === 'parent_group_id' || (id !== undefined && id !== null && id !== '')) && (typeof id !== 'string' || !UUID_LIKE.test(id))) {
      throw badRequest(`Security group id should be uuid: ${field} ${String(id)}.`)
    }
  }
  const protocol = typeof r.ip_protocol === 'string' ? r.ip_protocol.toLowerCase() : r.ip_protocol === undefined || r.ip_protocol === null ? null : undefined
  if (protocol === undefined || (protocol !== null && !['tcp', 'udp', 'icmp'].includes(protocol) && !/^\d{1,3}$/.test(protocol))) throw badRequest(`Invalid IP protocol ${String(r.ip_protocol)}.`)
  const port = (v: unknown, name: string): number | null => {
    if (v === undefined || v === null || v === '') return null
    const n = Number(v)
    if (!Number.isInteger(n)) throw badRequest(`Invalid ${name}: ${String(v)}, it must be an integer.`)
    return n
  }
  let from = port(r.from_port, 'from_port')
  let to = port(r.to_port, 'to_port')
  if (protocol === 'tcp' || protocol === 'udp') {
    if (from === null || to === null || from < 1 || to > 65535 || from > to) throw badRequest(`Invalid port range ${from}:${to}. Valid TCP and UDP ports are 1 to 65535, from_port not above to_port.`)
  } else if (protocol === 'icmp') {
    for (const v of [from, to]) if (v !== null && (v < -1 || v > 255)) throw badRequest(`Invalid ICMP type or code ${v}: -1 to 255.`)
    if (from === -1) from = null
    if (to === -1) to = null
  }
  const groupId = typeof r.group_id === 'string' && r.group_id !== '' ? r.group_id : null
  const cidr = groupId ? null : typeof r.cidr === 'string' && r.cidr !== '' ? r.cidr : '0.0.0.0/0'
  const parsed = cidr === null ? undefined : parseCidr(cidr)
  if (cidr !== null && !parsed) throw badRequest(`Invalid cidr ${cidr}.`)
  return {
    security_group_id: String(r.parent_group_id ?? ''),
    direction: 'ingress',
    ethertype: parsed?.version === 6 ? 'IPv6' : 'IPv4',
    protocol,
    port_range_min: from,
    port_range_max: to,
    remote_ip_prefix: cidr,
    remote_group_id: groupId,
  }
}

/** Neutron's answers in Nova's words: an unknown group is Nova's 404, any conflict a 400. */
async function asNova<T>(fn: () => Promise<T>, id?: string): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    if (err.code === 'not_found') throw notFound(id ? `Security group ${id} not found.` : err.message)
    if (err.code === 'conflict') throw badRequest(err.message)
    throw err
  }
}

export function securityGroupProxyRoutes(deps: AppDeps) {
  /** Runs fn in one network service transaction as the caller; `render` turns a group into Nova's view. */
  const withGroups = <T>(request: FastifyRequest, fn: (ctx: NetCtx, actor: Actor) => Promise<T>): Promise<T> => {
    requireBefore(request, 'noProxyApis')
    return deps.network.run(request.principal, fn)
  }
  const render = (group: View, visible: View[]) => {
    const remotes = new Map(visible.map((g) => [g.id as string, g as unknown as { name: string; project_id: string }]))
    return novaSecurityGroup(group as unknown as Parameters<typeof novaSecurityGroup>[0], (group.security_group_rules ?? []) as NovaRuleSource[], remotes)
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-security-groups', DOCS.list, async (request) => {
      const q = request.query
      const caller = callerOf(request)
      const allTenants = can(request, 'security_groups:all_tenants') && q.all_tenants !== undefined && !['0', 'false', 'False'].includes(q.all_tenants)
      return withGroups(request, async (ctx, actor) => {
        const all = await groups.listSecurityGroups(ctx, actor)
        const mine = allTenants ? all : all.filter((g) => g.project_id === caller.projectId)
        return { security_groups: mine.map((g) => render(g, all)) }
      })
    })
    scope.get<P1>('/v2.1/os-security-groups/:id', DOCS.show, async (request) =>
      withGroups(request, async (ctx, actor) => {
        const group = await asNova(() => groups.showSecurityGroup(ctx, actor, request.params.id), request.params.id)
        return { security_group: render(group, await groups.listSecurityGroups(ctx, actor)) }
      }),
    )
    scope.post('/v2.1/os-security-groups', DOCS.create, async (request) => {
      const g = (bodyObject(request).security_group ?? {}) as Record<string, unknown>
      const body = { name: property(g.name, 'name'), description: property(g.description ?? g.name, 'description') }
      return withGroups(request, async (ctx, actor) => {
        const group = await asNova(() => groups.createSecurityGroup(ctx, actor, body))
        return { security_group: render(group, [group]) }
      })
    })
    scope.put<P1>('/v2.1/os-security-groups/:id', DOCS.update, async (request) => {
      const g = (bodyObject(request).security_group ?? {}) as Record<string, unknown>
      const body = { name: property(g.name, 'name'), description: property(g.description, 'description') }
      return withGroups(request, async (ctx, actor) => {
        const group = await asNova(() => groups.updateSecurityGroup(ctx, actor, request.params.id, body), request.params.id)
        return { security_group: render(group, await groups.listSecurityGroups(ctx, actor)) }
      })
    })
    scope.delete<P1>('/v2.1/os-security-groups/:id', DOCS.delete, async (request, reply) => {
      await withGroups(request, async (ctx, actor) => {
        const group = await asNova(() => groups.showSecurityGroup(ctx, actor, request.params.id), request.params.id)
        // Nova refuses to remove the default group, whoever asks.
        if (group.name === 'default') throw badRequest('Removing default security group not allowed.')
        await asNova(() => groups.deleteSecurityGroup(ctx, actor, request.params.id), request.params.id)
      })
      return reply.code(202).send()
    })

    scope.post('/v2.1/os-security-group-rules', DOCS.createRule, async (request) => {
      const body = neutronRule((bodyObject(request).security_group_rule ?? {}) as Record<string, unknown>)
      return withGroups(request, async (ctx, actor) => {
        await asNova(() => groups.showSecurityGroup(ctx, actor, body.security_group_id!), body.security_group_id)
        if (body.remote_group_id) await asNova(() => groups.showSecurityGroup(ctx, actor, body.remote_group_id!), body.remote_group_id)
        const rule = await asNova(() => groups.createRule(ctx, actor, body))
        const group = await groups.showSecurityGroup(ctx, actor, body.security_group_id!)
        const nova = render({ ...group, security_group_rules: [rule] }, await groups.listSecurityGroups(ctx, actor))
        return { security_group_rule: (nova.rules as unknown[])[0] }
      })
    })
    scope.delete<P1>('/v2.1/os-security-group-rules/:id', DOCS.deleteRule, async (request, reply) => {
      await withGroups(request, (ctx, actor) => asNova(() => groups.deleteRule(ctx, actor, request.params.id)))
      return reply.code(202).send()
    })
  }
}
