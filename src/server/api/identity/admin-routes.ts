/**
 * The identity admin API under /identity/v3: domains, projects (and tags), users (and the self-service password
 * change), groups and membership, roles and implied roles, grants and role assignments, regions, services and
 * endpoints, domain configuration, policy blobs, OAuth 1.0a consumers, endpoint filtering (OS-EP-FILTER).
 * Encapsulated so its strict validator and token check apply to these routes only; every route needs a valid
 * token except the password change, which proves itself with the original password.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import { adminContext, useStrictValidation } from './admin/common.js'
import { domainRoutes } from './admin/domains.js'
import { domainConfigRoutes } from './admin/domain-configs.js'
import { projectRoutes } from './admin/projects.js'
import { groupRoutes, userRoutes } from './admin/users.js'
import { roleRoutes } from './admin/roles.js'
import { grantRoutes } from './admin/grants.js'
import { catalogRoutes } from './admin/catalog.js'
import { policyRoutes } from './admin/policies.js'
import { oauthConsumerRoutes } from './admin/oauth-consumers.js'
import { endpointFilterRoutes } from './admin/endpoint-filter.js'

export function adminRoutes(deps: AppDeps) {
  return async (parent: FastifyInstance): Promise<void> => {
    await parent.register(
      async (scope) => {
        useStrictValidation(scope)
        const requireAuth = authHook(deps.tokens, deps.urls.identity)
        scope.addHook('onRequest', (request, reply, done) => {
          if (request.routeOptions.config.public) return done()
          requireAuth(request, reply, done)
        })
        const ctx = adminContext(deps)
        domainRoutes(scope, ctx)
        domainConfigRoutes(scope, ctx)
        projectRoutes(scope, ctx)
        userRoutes(scope, ctx)
        groupRoutes(scope, ctx)
        roleRoutes(scope, ctx)
        grantRoutes(scope, ctx)
        catalogRoutes(scope, ctx)
        policyRoutes(scope, ctx)
        oauthConsumerRoutes(scope, ctx)
        endpointFilterRoutes(scope, ctx)
      },
      { prefix: '/v3' },
    )
  }
}
