/**
 * The project-facing compute API: servers and their actions and sub-resources, flavors, key pairs, zones, aggregates, migrations, external events,
 * limits, quotas, server groups, usage and the legacy audit log and extension list. Each resource is in its own file; this one composes them.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { imageServiceLookup } from '../../compute/images.js'
import { serverRoutes as serversResource } from './servers.js'
import { serverActionRoutes } from './server-actions.js'
import { serverSubresourceRoutes } from './server-subresources.js'
import { serverNetworkRoutes } from './server-network-routes.js'
import { flavorRoutes } from './flavors.js'
import { keypairRoutes } from './keypairs.js'
import { availabilityZoneRoutes } from './availability-zones.js'
import { aggregateRoutes } from './aggregates.js'
import { migrationRoutes } from './migrations.js'
import { serverExternalEventRoutes } from './server-external-events.js'
import { legacyApiRoutes } from './legacy-apis.js'
import { limitQuotaRoutes } from './limits-quotas.js'
import { serverGroupRoutes } from './server-groups.js'
import { usageRoutes } from './usage.js'
import { volumeAttachmentRoutes } from './volume-attachments.js'
import { remoteConsoleRoutes } from './remote-consoles.js'
import { serverMetricsRoutes } from './server-metrics.js'
import { imageProxyRoutes } from './images.js'
import { volumeProxyRoutes } from './volumes-proxy.js'
import { networkProxyRoutes } from './networks-proxy.js'
import { securityGroupProxyRoutes } from './security-groups-proxy.js'
import { floatingIpProxyRoutes } from './floating-ips-proxy.js'

export function serverRoutes(deps: AppDeps) {
  const withImages = { ...deps, imageLookup: imageServiceLookup(deps.images) }
  return async (scope: FastifyInstance): Promise<void> => {
    await serversResource(withImages)(scope)
    await serverActionRoutes(withImages)(scope)
    await serverSubresourceRoutes(withImages)(scope)
    await serverNetworkRoutes(withImages)(scope)
    await volumeAttachmentRoutes(withImages)(scope)
    await flavorRoutes(deps)(scope)
    await keypairRoutes(deps)(scope)
    await availabilityZoneRoutes(deps)(scope)
    await aggregateRoutes(deps)(scope)
    await migrationRoutes(deps)(scope)
    await serverExternalEventRoutes(deps)(scope)
    await legacyApiRoutes(deps)(scope)
    await limitQuotaRoutes(deps)(scope)
    await serverGroupRoutes(deps)(scope)
    await usageRoutes(deps)(scope)
    await remoteConsoleRoutes(deps)(scope)
    await serverMetricsRoutes(deps)(scope)
    await imageProxyRoutes(deps)(scope)
    await volumeProxyRoutes(deps)(scope)
    await networkProxyRoutes(deps)(scope)
    await securityGroupProxyRoutes(deps)(scope)
    await floatingIpProxyRoutes(deps)(scope)
  }
}
