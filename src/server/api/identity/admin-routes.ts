/** Identity admin routes; filled in by the identity issue. */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'

export function adminRoutes(_deps: AppDeps) {
  return async (_scope: FastifyInstance): Promise<void> => {}
}
