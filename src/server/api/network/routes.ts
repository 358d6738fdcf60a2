/**
 * The network API (Neutron v2.0) under `{base}/network`: version and extension documents, then networks,
 * subnets, ports, security groups and rules, routers, floating IPs and quotas. Handlers are thin: they pick
 * the domain operation, run it through NetworkService.run (one transaction, the caller's principal) and shape
 * the list answer (filters, fields, sorting, pagination) with listing.ts.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { Ajv } from 'ajv'
import { documentedForm, networkBodyAjv } from './validator.js'
import { addDocs, documented, noBody, OPEN, type JsonSchema } from '../../http/openapi.js'
import { compiledOnFirstUse } from '../../http/validators.js'
import { A, LIST_QUERY, many, one, SHOW_QUERY } from './answers.js'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import type { Actor, NetCtx } from '../../network/context.js'
import { must } from '../../network/context.js'
import { neutron } from '../../network/errors.js'
import { fieldsOf, listResponse, projectFields, type CustomFilter, type Query } from '../../network/listing.js'
import type { View } from '../../network/views.js'
import { queryAsSent, rowsStamp, ViewCache } from '../../http/view-cache.js'
import type { Db } from '../../storage/store.js'
import * as networks from '../../network/networks.js'
import * as subnets from '../../network/subnets.js'
import * as subnetPools from '../../network/subnet-pools.js'
import * as addressScopes from '../../network/address-scopes.js'
import * as ports from '../../network/ports.js'
import * as groups from '../../network/security-groups.js'
import * as routers from '../../network/routers.js'
import * as fips from '../../network/floating-ips.js'
import * as quotas from '../../network/quotas.js'
import { EXTENSIONS, extensionView, resourcesDocument, versionsDocument } from './discovery.js'
import * as schemas from './schemas.js'
import type { FromSchema } from '../../http/route-types.js'
import { tagRoutes, type TaggedResource } from './tag-routes.js'
import { agentRoutes } from './agent-routes.js'

type IdParams = { id: string }

/**
 * One resource of the table, typed by the schemas its create and update bodies are validated with (schemas.ts):
 * the domain's create and update must take the member those schemas let through (the domain's NetworkBody,
 * PortBody… are checked against them here), and the routes read the body as that member.
 */
interface Resource<CS, US> {
  /** URL segment: networks, security-groups… */
  path: string
  /** JSON key of the collection and of one member. */
  collection: string
  member: string
  list: (ctx: NetCtx, actor: Actor, query: Query) => Promise<View[]>
  /** The list's rows for a query whose answer may be kept, undefined for other queries (list answers them). */
  keptList?: (ctx: NetCtx, actor: Actor, query: Query) => Promise<ports.KeptListRows | undefined>
  show: (ctx: NetCtx, actor: Actor, id: string) => Promise<View>
  /** The show answer as kept bytes (`{member: view}`), from a view cache of its own (http/view-cache.ts). */
  keptShow?: { answer: (ctx: NetCtx, actor: Actor, id: string, views: ViewCache) => Promise<Buffer>; live: (db: Db, ids: string[]) => Promise<Set<string>> }
  create: (ctx: NetCtx, actor: Actor, body: Member<NoInfer<CS>>) => Promise<View>
  update?: (ctx: NetCtx, actor: Actor, id: string, body: Member<NoInfer<US>>) => Promise<View>
  remove: (ctx: NetCtx, actor: Actor, id: string) => Promise<void>
  createSchema: CS
  updateSchema?: US
  custom?: Record<string, CustomFilter>
  /** Its list or show writes (security groups: the project's default group is made on first sight, as Neutron does), so they run in a transaction. */
  readsWrite?: true
}

/** One member a body schema admits: the value under the member's key (a bulk create's list holds the same). */
type Member<S> = Exclude<FromSchema<S>[keyof FromSchema<S>], undefined | readonly unknown[]>
/** A create body as its schema admits it: one member under its key, or (bulk) a list of them under the collection's. */
type CreateBody<M> = Record<string, M | M[] | undefined>
/** An update body: the member under its key. */
type UpdateBody<M> = Record<string, M>

/** A bulk create's list (the collection's key), not one member (an object). */
const isList = <T>(given: T | T[]): given is T[] => Array.isArray(given)

/** Receives each row of the table with its own body types (the rows differ, so they are not one array). */
type AddResource = <CS, US>(r: Resource<CS, US>) => void

const asList = (v: unknown): string[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v.map(String) : [String(v)])

function resources(add: AddResource): void {
  add({
    path: 'networks', collection: 'networks', member: 'network',
    list: (ctx, actor) => networks.listNetworks(ctx, actor), show: networks.showNetwork, keptShow: { answer: networks.showNetworkKept, live: networks.existingNetworkIds }, create: networks.createNetwork, update: networks.updateNetwork, remove: networks.deleteNetwork,
    createSchema: schemas.networkCreate, updateSchema: schemas.networkUpdate,
  })
  add({
    path: 'subnets', collection: 'subnets', member: 'subnet',
    list: (ctx, actor) => subnets.listSubnets(ctx, actor), show: subnets.showSubnet, create: subnets.createSubnet, update: subnets.updateSubnet, remove: subnets.deleteSubnet,
    createSchema: schemas.subnetCreate, updateSchema: schemas.subnetUpdate,
  })
  add({
    path: 'subnetpools', collection: 'subnetpools', member: 'subnetpool',
    list: (ctx, actor) => subnetPools.listSubnetPools(ctx, actor), show: subnetPools.showSubnetPool, create: subnetPools.createSubnetPool, update: subnetPools.updateSubnetPool, remove: subnetPools.deleteSubnetPool,
    createSchema: schemas.subnetPoolCreate, updateSchema: schemas.subnetPoolUpdate,
  })
  add({
    path: 'address-scopes', collection: 'address_scopes', member: 'address_scope',
    list: (ctx, actor) => addressScopes.listAddressScopes(ctx, actor), show: addressScopes.showAddressScope, create: addressScopes.createAddressScope, update: addressScopes.updateAddressScope, remove: addressScopes.deleteAddressScope,
    createSchema: schemas.addressScopeCreate, updateSchema: schemas.addressScopeUpdate,
  })
  add({
    path: 'ports', collection: 'ports', member: 'port',
    list: (ctx, actor, query) => ports.listPorts(ctx, actor, { device_id: asList(query.device_id), network_id: asList(query.network_id) }),
    keptList: (ctx, actor, query) => ports.keptPortList(ctx, actor, { device_id: asList(query.device_id), network_id: asList(query.network_id) }),
    show: ports.showPort, create: ports.createPort, update: ports.updatePort, remove: ports.deletePort,
    createSchema: schemas.portCreate, updateSchema: schemas.portUpdate, custom: { fixed_ips: ports.fixedIpsFilter },
  })
  add({
    path: 'security-groups', collection: 'security_groups', member: 'security_group',
    list: (ctx, actor) => groups.listSecurityGroups(ctx, actor), show: groups.showSecurityGroup, create: groups.createSecurityGroup, update: groups.updateSecurityGroup, remove: groups.deleteSecurityGroup,
    createSchema: schemas.securityGroupCreate, updateSchema: schemas.securityGroupUpdate, readsWrite: true,
  })
  add({
    path: 'security-group-rules', collection: 'security_group_rules', member: 'security_group_rule',
    list: (ctx, actor) => groups.listRules(ctx, actor), show: groups.showRule, create: groups.createRule, remove: groups.deleteRule,
    createSchema: schemas.ruleCreate, readsWrite: true,
  })
  add({
    path: 'routers', collection: 'routers', member: 'router',
    list: (ctx, actor) => routers.listRouters(ctx, actor), show: routers.showRouter, create: routers.createRouter, update: routers.updateRouter, remove: routers.deleteRouter,
    createSchema: schemas.routerCreate, updateSchema: schemas.routerUpdate,
  })
  add({
    path: 'floatingips', collection: 'floatingips', member: 'floatingip',
    list: (ctx, actor) => fips.listFloatingIps(ctx, actor), show: fips.showFloatingIp, create: fips.createFloatingIp, update: fips.updateFloatingIp, remove: fips.deleteFloatingIp,
    createSchema: schemas.floatingIpCreate, updateSchema: schemas.floatingIpUpdate,
  })
}

/** Bodies get Neutron's conversions and nothing more (validator.ts); query strings and path parameters the usual coercion. */
function strictValidators(scope: FastifyInstance): void {
  const strict = networkBodyAjv()
  const loose = new Ajv({ allErrors: false, coerceTypes: 'array', useDefaults: true, removeAdditional: false, strict: false })
  scope.setValidatorCompiler(compiledOnFirstUse(({ schema, httpPart }) => (httpPart === 'body' ? strict.compile(schema) : loose.compile(schema))))
  // The document shows what the conversion keywords accept in standard JSON Schema.
  scope.addHook('onRoute', (route) => {
    if (route.schema?.body) addDocs(route, { body: documentedForm(route.schema.body) as JsonSchema })
  })
}

export function networkRoutes(deps: AppDeps) {
  const service = deps.network
  const base = deps.urls.network
  return async (scope: FastifyInstance): Promise<void> => {
    strictValidators(scope)
    scope.get('/', documented({ ...OPEN, summary: 'Network API versions', response: { 200: A.versions } }), async () => versionsDocument(base))

    await scope.register(async (api) => {
      api.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
      const resourceIndex = async () => resourcesDocument(base)
      const indexDocs = documented({ summary: 'The resources of the network API v2.0', response: { 200: A.resources } })
      api.get('/v2.0', indexDocs, resourceIndex)
      api.get('/v2.0/', indexDocs, resourceIndex)
      const extensions = { type: 'object', properties: { extensions: { type: 'array', items: A.extension } }, required: ['extensions'] }
      // Built once: the list is fixed, and its 40 views were most of the route's cost (docs/benchmarks.md, issue 30).
      const extensionList = { extensions: EXTENSIONS.map(extensionView) }
      api.get('/v2.0/extensions', documented({ summary: 'The extensions this service implements', response: { 200: extensions } }), async () => extensionList)
      const extension = { type: 'object', properties: { extension: A.extension }, required: ['extension'] }
      api.get<{ Params: { alias: string } }>('/v2.0/extensions/:alias', documented({ summary: 'One extension', response: { 200: extension } }), async (request) => {
        const ext = EXTENSIONS.find((e) => e.alias === request.params.alias)
        if (!ext) throw neutron.notFound('ExtensionNotFound', `Extension with alias ${request.params.alias} does not exist`)
        return { extension: extensionView(ext) }
      })

      const tagged: TaggedResource[] = []
      const register = <CS, US>(r: Resource<CS, US>): void => {
        const url = `${base}/v2.0/${r.path}`
        const name = r.member.replaceAll('_', ' ')
        const read = r.readsWrite ? service.run.bind(service) : service.read.bind(service)
        const answer = (items: View[], query: Query) => {
          const attributes = [...new Set(items.flatMap((i) => Object.keys(i)))]
          return listResponse(items, query, { collection: r.collection, url, attributes, custom: r.custom })
        }
        const keptList = r.keptList
        // Entries keyed by the query as sent, per caller variant: a poll that repeats itself finds its answer.
        const lists = keptList && new ViewCache({ budgetBytes: deps.config.viewCacheMb * 1024 * 1024 })
        api.get<{ Querystring: Query }>(`/v2.0/${r.path}`, documented({ summary: `List ${r.path.replaceAll('-', ' ')}`, querystring: LIST_QUERY, response: { 200: many(r.collection, r.member) } }), async (request, reply) => {
          const query = request.query
          if (keptList && lists) {
            const body = await read(request.principal, async (ctx, actor) => {
              const rows = await keptList(ctx, actor, query)
              if (!rows) return undefined
              // Kept at the stamp of the rows it was rendered from, which may be newer than the one just read.
              return lists.keepRendered(rows.variant, queryAsSent(request.url), rowsStamp(rows.stamp), async () => {
                const fresh = await rows.render()
                return { body: answer(fresh.items, query), stamp: rowsStamp(fresh.stamp) }
              })
            })
            // The header Fastify gives the object this route answers otherwise.
            if (body) return reply.type('application/json; charset=utf-8').send(body)
          }
          return answer(await read(request.principal, (ctx, actor) => r.list(ctx, actor, query)), query)
        })
        const kept = r.keptShow
        const views = kept && new ViewCache({ budgetBytes: deps.config.viewCacheMb * 1024 * 1024, live: (ids) => kept.live(deps.store.db, ids) })
        api.get<{ Params: IdParams; Querystring: Query }>(`/v2.0/${r.path}/:id`, documented({ summary: `Show a ${name}`, querystring: SHOW_QUERY, response: { 200: one(r.member) } }), async (request, reply) => {
          // The whole view only: an answer cut to `fields=` is built from the view each time, as before.
          if (kept && views && fieldsOf(request.query).length === 0) {
            const body = await read(request.principal, (ctx, actor) => kept.answer(ctx, actor, request.params.id, views))
            // The header Fastify gives the object this route answered before its view was kept.
            return reply.type('application/json; charset=utf-8').send(body)
          }
          const item = await read(request.principal, (ctx, actor) => r.show(ctx, actor, request.params.id))
          return { [r.member]: projectFields(item, fieldsOf(request.query)) }
        })
        api.post<{ Body: CreateBody<Member<CS>> }>(`/v2.0/${r.path}`, { schema: { body: r.createSchema }, ...documented({ summary: `Create a ${name}, or several at once (all or none)`, response: { 201: { anyOf: [one(r.member), many(r.collection, r.member)] } } }) }, async (request, reply: FastifyReply) => {
          const given = request.body[r.collection] ?? request.body[r.member]
          // The schema admits exactly one of the two keys; the type cannot say which.
          if (given === undefined) throw neutron.badRequest(r.member, `Resource body required: ${r.member} or ${r.collection}`)
          if (isList(given)) {
            // Neutron's bulk create: every member in one transaction, all created or none.
            const items = await service.run(request.principal, async (ctx, actor) => {
              const created: View[] = []
              for (const member of given) created.push(await r.create(ctx, actor, member))
              return created
            })
            return reply.code(201).send({ [r.collection]: items })
          }
          const item = await service.run(request.principal, (ctx, actor) => r.create(ctx, actor, given))
          return reply.code(201).send({ [r.member]: item })
        })
        if (r.update) {
          const update = r.update
          api.put<{ Params: IdParams; Body: UpdateBody<Member<US>> }>(`/v2.0/${r.path}/:id`, { schema: { body: r.updateSchema }, ...documented({ summary: `Update a ${name}`, response: { 200: one(r.member) } }) }, async (request) => {
            const item = await service.run(request.principal, (ctx, actor) => update(ctx, actor, request.params.id, request.body[r.member]))
            return { [r.member]: item }
          })
          tagged.push({ path: r.path, show: r.show, update } as TaggedResource)
        }
        api.delete<{ Params: IdParams }>(`/v2.0/${r.path}/:id`, documented({ summary: `Delete a ${name}`, response: { 204: noBody('Deleted') } }), async (request, reply) => {
          await service.run(request.principal, (ctx, actor) => r.remove(ctx, actor, request.params.id))
          return reply.code(204).send()
        })
      }
      resources(register)

      tagRoutes(api, service, tagged)
      agentRoutes(api, deps)

      const interfaceDocs = (summary: string) => documented({ summary, response: { 200: A.routerInterface } })
      api.put<{ Params: IdParams; Body: FromSchema<typeof schemas.routerInterface> }>('/v2.0/routers/:id/add_router_interface', { schema: { body: schemas.routerInterface }, ...interfaceDocs('Attach a subnet or port to a router') }, async (request) =>
        service.run(request.principal, (ctx, actor) => routers.addInterface(ctx, actor, request.params.id, request.body)),
      )
      api.put<{ Params: IdParams; Body: FromSchema<typeof schemas.routerInterface> }>('/v2.0/routers/:id/remove_router_interface', { schema: { body: schemas.routerInterface }, ...interfaceDocs('Detach a subnet or port from a router') }, async (request) =>
        service.run(request.principal, (ctx, actor) => routers.removeInterface(ctx, actor, request.params.id, request.body)),
      )

      api.get('/v2.0/quotas', documented({ summary: 'Projects with quotas set (admin)', response: { 200: A.quotas } }), async (request) =>
        service.run(request.principal, async (ctx, actor) => {
          must(actor, 'list_quotas')
          return { quotas: await quotas.listQuotas(ctx.db) }
        }),
      )
      api.get<{ Params: { project: string } }>('/v2.0/quotas/:project', documented({ summary: "A project's quotas", response: { 200: A.quota } }), async (request) =>
        service.run(request.principal, async (ctx, actor) => {
          must(actor, 'get_quota', { projectId: request.params.project })
          return { quota: await quotas.quotaLimits(ctx.db, request.params.project) }
        }),
      )
      api.get<{ Params: { project: string } }>('/v2.0/quotas/:project/default', documented({ summary: 'Default quotas', response: { 200: A.quota } }), async (request) =>
        service.run(request.principal, async (_ctx, actor) => {
          must(actor, 'get_quota', { projectId: request.params.project })
          return { quota: { ...quotas.QUOTA_DEFAULTS } }
        }),
      )
      // Neutron also answers with a `.json` format suffix, which Tempest's quota client uses here.
      for (const url of ['/v2.0/quotas/:project/details', '/v2.0/quotas/:project/details.json']) {
        api.get<{ Params: { project: string } }>(url, documented({ summary: "A project's quotas with usage", response: { 200: A.quotaDetails } }), async (request) =>
          service.run(request.principal, async (ctx, actor) => {
            must(actor, 'get_quota', { projectId: request.params.project })
            return { quota: await quotas.quotaDetails(ctx.db, request.params.project) }
          }),
        )
      }
      api.put<{ Params: { project: string }; Body: FromSchema<typeof schemas.quotaUpdate> }>('/v2.0/quotas/:project', { schema: { body: schemas.quotaUpdate }, ...documented({ summary: "Change a project's quotas (admin)", response: { 200: A.quota } }) }, async (request) =>
        service.run(request.principal, async (ctx, actor) => {
          must(actor, 'update_quota', { projectId: request.params.project })
          await quotas.setQuota(ctx.db, request.params.project, request.body.quota)
          return { quota: await quotas.quotaLimits(ctx.db, request.params.project) }
        }),
      )
      api.delete<{ Params: { project: string } }>('/v2.0/quotas/:project', documented({ summary: "Reset a project's quotas (admin)", response: { 204: noBody('Reset') } }), async (request, reply) => {
        await service.run(request.principal, async (ctx, actor) => {
          must(actor, 'delete_quota', { projectId: request.params.project })
          await quotas.resetQuota(ctx.db, request.params.project)
        })
        return reply.code(204).send()
      })
    })
  }
}
