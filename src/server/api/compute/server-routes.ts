/**
 * The project-facing compute API: servers and their actions and sub-resources, flavors, key pairs, zones,
 * limits, quotas, server groups and usage. Each resource is in its own file; this one composes them.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { acceptAnyImage, imageServiceLookup, type ImageServiceLike } from '../../compute/images.js'
import { serverRoutes as serversResource } from './servers.js'
import { serverActionRoutes } from './server-actions.js'
import { serverSubresourceRoutes } from './server-subresources.js'
import { serverNetworkRoutes } from './server-network-routes.js'
import { flavorRoutes } from './flavors.js'
import { keypairRoutes } from './keypairs.js'
import { availabilityZoneRoutes } from './availability-zones.js'
import { limitQuotaRoutes } from './limits-quotas.js'
import { serverGroupRoutes } from './server-groups.js'
import { usageRoutes } from './usage.js'

export function serverRoutes(deps: AppDeps) {
  // The image service (deps.images) arrives with its own branch; until then every UUID is an active image.
  const service = (deps as { images?: ImageServiceLike }).images
  const withImages = { ...deps, imageLookup: service ? imageServiceLookup(service) : acceptAnyImage }
  return async (scope: FastifyInstance): Promise<void> => {
    await serversResource(withImages)(scope)
    await serverActionRoutes(withImages)(scope)
    await serverSubresourceRoutes(withImages)(scope)
    await serverNetworkRoutes(withImages)(scope)
    await flavorRoutes(deps)(scope)
    await keypairRoutes(deps)(scope)
    await availabilityZoneRoutes(deps)(scope)
    await limitQuotaRoutes(deps)(scope)
    await serverGroupRoutes(deps)(scope)
    await usageRoutes(deps)(scope)
  }
}
