/**
 * The compute API (Nova v2.1). The version documents are open; every other route sits in a scope that
 * authenticates the token and parses the microversion (context.ts). Servers, flavors, key pairs and the other
 * project-facing resources are in server-routes.ts and its neighbours; the host views (os-hypervisors,
 * os-services) in hosts-routes.ts, os-hosts in legacy-hosts.ts. Routes are registered under /v2.1/… (the family prefix is /compute).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { AppError } from '../../../contracts/errors.js'
import { authHook } from '../../auth/http-auth.js'
import { serverRoutes } from './server-routes.js'
import { hostRoutes } from './hosts-routes.js'
import { legacyHostRoutes } from './legacy-hosts.js'
import { versionRoutes } from './versions.js'
import { useMicroversions, useSingleQueryValues } from './context.js'
import { addDocs } from '../../http/openapi.js'
import { loneSurrogateInJson, nulInJson } from '../../http/json-body.js'
import { MICROVERSION_HEADERS } from '../../../contracts/compute/schemas.js'

export function computeRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    await versionRoutes(deps)(scope)
    await scope.register(async (api) => {
      useMicroversions(api)
      useSingleQueryValues(api)
      api.addHook('onRoute', (route) => addDocs(route, { headers: MICROVERSION_HEADERS }))
      // Nova reads JSON whatever the client calls it: text/plain (curl's default) and Nova's own media type too.
      api.removeContentTypeParser('text/plain')
      api.addContentTypeParser(['text/plain', 'application/vnd.openstack.compute+json'], { parseAs: 'string' }, (_request, body, done) => {
        const nul = nulInJson(body as string)
        if (nul) return done(nul, undefined)
        let value: unknown
        try {
          value = body === '' ? undefined : JSON.parse(body as string)
        } catch {
          return done(new AppError('bad_request', 'Malformed request body'), undefined)
        }
        const surrogate = loneSurrogateInJson(body as string, value)
        done(surrogate ?? null, surrogate ? undefined : value)
      })
      api.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
      await serverRoutes(deps)(api)
      await hostRoutes(deps)(api)
      await legacyHostRoutes(deps)(api)
    })
  }
}
