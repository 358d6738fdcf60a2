/** The resource manager API ({base}/resmgr): IdP client secrets (idp-clients.ts), support-bundle keys (support.ts); hosts and roles (hosts.ts); the bytes hosts move (host-data-routes.ts); what storage and hypervisor hosts need for volumes (storage.ts). */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { hostDataRoutes } from './host-data-routes.js'
import { hostNetworkRoutes } from './host-network.js'
import { hostRoutes } from './hosts.js'
import { storageHostRoutes } from './storage.js'
import { idpClientRoutes } from './idp-clients.js'
import { supportRoutes } from './support.js'

export function resmgrRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await idpClientRoutes(deps)(scope)
    await supportRoutes(deps)(scope)
    await hostRoutes(deps)(scope)
    await hostDataRoutes(deps)(scope)
    await hostNetworkRoutes(deps)(scope)
    await scope.register(storageHostRoutes(deps))
  }
}
