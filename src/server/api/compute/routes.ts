/**
 * The compute API (Nova v2.1). Servers, flavors, key pairs and the other project-facing resources are in
 * server-routes.ts and its neighbours; the host views (os-hypervisors, os-services) in hosts-routes.ts.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { serverRoutes } from './server-routes.js'
import { hostRoutes } from './hosts-routes.js'

export function computeRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await serverRoutes(deps)(scope)
    await hostRoutes(deps)(scope)
  }
}
