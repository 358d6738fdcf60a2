/**
 * The identity API (Keystone v3). Authentication and tokens live in auth-routes.ts; the admin resources
 * (domains, projects, users, groups, roles, assignments, catalog records) in admin-routes.ts.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { authRoutes } from './auth-routes.js'
import { adminRoutes } from './admin-routes.js'

export function identityRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await authRoutes(deps)(scope)
    await adminRoutes(deps)(scope)
  }
}
