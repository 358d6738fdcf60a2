/** The resource manager API (Platform9 resmgr): support-bundle keys; IdP clients and hosts are added by their issues. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { supportRoutes } from './support.js'

export function resmgrRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await supportRoutes(deps)(scope)
  }
}
