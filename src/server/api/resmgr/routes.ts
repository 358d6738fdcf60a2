/** The resmgr API. Its routes are filled in by the resmgr issue; until then every path answers 404 in the family's shape. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'

export function resmgrRoutes(_deps: AppDeps) {
  return async (_scope: FastifyInstance): Promise<void> => {}
}
