/**
 * The table of API families: which prefix each serves and in which error shape. Adding a service is one row
 * here plus its folder under api/.
 */
import type { AppDeps } from '../deps.js'
import type { ApiFamily } from '../http/api-family.js'
import { renderComputeFault, renderGlanceError, renderIdentityError, renderNeutronError, renderOAuthError, renderPlainError } from '../http/error-renderers.js'
import { identityRoutes } from './identity/routes.js'
import { computeRoutes } from './compute/routes.js'
import { networkRoutes } from './network/routes.js'
import { volumeRoutes } from './volume/routes.js'
import { imageRoutes } from './image/routes.js'
import { resmgrRoutes } from './resmgr/routes.js'
import { idpRoutes } from './idp/routes.js'

export function apiFamilies(deps: AppDeps): ApiFamily[] {
  return [
    // Keystone's answers depend on the caller's token: every identity response says so to caches.
    { name: 'identity', prefix: '/identity', renderError: renderIdentityError, fixedHeaders: { vary: 'X-Auth-Token' }, routes: identityRoutes(deps) },
    { name: 'compute', prefix: '/compute', renderError: renderComputeFault, requestIdHeaders: ['x-compute-request-id'], routes: computeRoutes(deps) },
    { name: 'network', prefix: '/network', renderError: renderNeutronError, routes: networkRoutes(deps) },
    { name: 'volume', prefix: '/volume', renderError: renderComputeFault, routes: volumeRoutes(deps) },
    { name: 'image', prefix: '/image', renderError: renderGlanceError, routes: imageRoutes(deps) },
    { name: 'resmgr', prefix: '/resmgr', renderError: renderPlainError, routes: resmgrRoutes(deps) },
    { name: 'idp', prefix: '/idp', renderError: renderOAuthError, routes: idpRoutes(deps) },
  ]
}
