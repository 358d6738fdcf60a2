/** Compute server routes; filled in by the compute issues. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'

export function serverRoutes(_deps: AppDeps) {
  return async (_scope: FastifyInstance): Promise<void> => {}
}
