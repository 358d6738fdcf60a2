/**
 * The compute API (Nova v2.1). The version documents are open; every other route sits in a scope that
 * authenticates the token and parses the microversion (context.ts). Servers, flavors, key pairs and the other
 * project-facing resources are in server-routes.ts and its neighbours; the host views (os-hypervisors,
 * os-services) in hosts-routes.ts. Routes are registered under /v2.1/… (the family prefix is /compute).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import { serverRoutes } from './server-routes.js'
import { hostRoutes } from './hosts-routes.js'
import { versionRoutes } from './versions.js'
import { useMicroversions } from './context.js'

export function computeRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await versionRoutes(deps)(scope)
    await scope.register(async (api) => {
      useMicroversions(api)
      api.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
      await serverRoutes(deps)(api)
      await hostRoutes(deps)(api)
    })
  }
}
