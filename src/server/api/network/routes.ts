/** The network API. Its routes are filled in by the network issue; until then every path answers 404 in the family's shape. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'

export function networkRoutes(_deps: AppDeps) {
  return async (_scope: FastifyInstance): Promise<void> => {}
}
