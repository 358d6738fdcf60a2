/** The resource manager API ({base}/resmgr): IdP client secrets (idp-clients.ts); hosts and roles join here. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { idpClientRoutes } from './idp-clients.js'

export function resmgrRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await idpClientRoutes(deps)(scope)
  }
}
