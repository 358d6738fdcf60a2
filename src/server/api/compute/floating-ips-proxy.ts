/**
 * Nova's floating IP proxies, `/os-floating-ips` and `/os-floating-ip-pools` (2.1–2.35; 404 from 2.36, where Nova
 * removed them): the caller's floating IPs in the network service, in nova-network's shape; a pool is an external
 * network, by name or id (as Nova's Neutron driver finds it). The addFloatingIp / removeFloatingIp server actions are with the other actions.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, badRequest, notFound } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import type { Actor, NetCtx } from '../../network/context.js'
import * as fips from '../../network/floating-ips.js'
import { listNetworks } from '../../network/networks.js'
import type { View } from '../../network/views.js'
import { bodyObject, callerOf, requireBefore } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A, PROXY } from '../../../contracts/compute/answers.js'
import { acceptedIn, envelope, listOf } from '../../../contracts/compute/schemas.js'

type P1 = { Params: { id: string } }

const DOCS = {
  pools: documented({ summary: `List floating IP pools (the external networks)${PROXY.summary}`, response: { 200: A.floatingIpPools } }),
  list: documented({ summary: `List the project's floating IPs${PROXY.summary}`, response: { 200: envelope('floating_ips', listOf(A.floatingIp)) } }),
  show: documented({ summary: `Show a floating IP${PROXY.summary}`, response: { 200: envelope('floating_ip', A.floatingIp) } }),
  create: documented({
    summary: `Allocate a floating IP from a pool (by name or network id; without one, the only external network)${PROXY.summary}`,
    body: acceptedIn({ type: 'object', properties: { pool: { type: ['string', 'null'] } } }, PROXY.versions),
    response: { 200: envelope('floating_ip', A.floatingIp) },
  }),
  delete: documented({ summary: `Release a floating IP${PROXY.summary}`, response: { 202: noBody('Released') } }),
}

export function floatingIpProxyRoutes(deps: AppDeps) {
  const run = <T>(request: FastifyRequest, fn: (ctx: NetCtx, actor: Actor) => Promise<T>): Promise<T> => {
    requireBefore(request, 'noProxyApis')
    return deps.network.run(request.principal, fn)
  }
  const pools = async (ctx: NetCtx, actor: Actor) => (await listNetworks(ctx, actor)).filter((n) => n['router:external'] === true)
  /** Nova's view: the server is the device of the fixed port, the pool the floating network's name. */
  const view = async (ctx: NetCtx, fip: View, networks: View[]) => {
    const instanceId = await fips.floatingIpInstance(ctx, fip.port_id as string | null | undefined)
    return {
      id: fip.id,
      ip: fip.floating_ip_address,
      fixed_ip: fip.fixed_ip_address ?? null,
      instance_id: instanceId,
      pool: (networks.find((n) => n.id === fip.floating_network_id)?.name as string | undefined) ?? null,
    }
  }
  const mine = (request: FastifyRequest, all: View[]) => all.filter((f) => f.project_id === callerOf(request).projectId)
  /** Neutron's 404 for a floating IP is Nova's "Floating IP not found for ID". */
  const shown = async (ctx: NetCtx, actor: Actor, id: string) => {
    try {
      return await fips.showFloatingIp(ctx, actor, id)
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw notFound(`Floating IP not found for ID ${id}`)
      throw err
    }
  }

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/v2.1/os-floating-ip-pools', DOCS.pools, async (request) =>
      run(request, async (ctx, actor) => ({ floating_ip_pools: (await pools(ctx, actor)).map((n) => ({ name: n.name })) })),
    )
    scope.get('/v2.1/os-floating-ips', DOCS.list, async (request) =>
      run(request, async (ctx, actor) => {
        const networks = await listNetworks(ctx, actor)
        return { floating_ips: await Promise.all(mine(request, await fips.listFloatingIps(ctx, actor)).map((f) => view(ctx, f, networks))) }
      }),
    )
    scope.get<P1>('/v2.1/os-floating-ips/:id', DOCS.show, async (request) =>
      run(request, async (ctx, actor) => ({ floating_ip: await view(ctx, await shown(ctx, actor, request.params.id), await listNetworks(ctx, actor)) })),
    )
    scope.post('/v2.1/os-floating-ips', DOCS.create, async (request) => {
      const pool = (request.body === undefined || request.body === null ? {} : bodyObject(request)).pool
      if (pool !== undefined && pool !== null && typeof pool !== 'string') throw badRequest('Invalid input: pool must be a network name.')
      return run(request, async (ctx, actor) => {
        const candidates = await pools(ctx, actor)
        // Without a pool, the only external network (Nova's default_floating_pool names one; there is no config here).
        const network = pool ? candidates.find((n) => n.name === pool || n.id === pool) : candidates.length === 1 ? candidates[0] : undefined
        if (!network) throw notFound(pool ? `Floating IP pool not found: ${pool}.` : 'No floating IP pool given and no single one to choose.')
        const created = await fips.createFloatingIp(ctx, actor, { floating_network_id: network.id as string })
        return { floating_ip: await view(ctx, created, candidates) }
      })
    })
    scope.delete<P1>('/v2.1/os-floating-ips/:id', DOCS.delete, async (request, reply) => {
      await run(request, async (ctx, actor) => {
        await shown(ctx, actor, request.params.id)
        await fips.deleteFloatingIp(ctx, actor, request.params.id)
      })
      return reply.code(202).send()
    })
  }
}
