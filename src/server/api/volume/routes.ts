/**
 * The block storage API (Cinder v3 under {base}/volume). The catalog URL is `{base}/volume/v3`; every route is
 * also served under `/v3/{project_id}/…`, the form older clients build. Handlers are thin: parse, call the
 * service once, shape the answer for the request's microversion.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import { formatVersion, MAX_VOLUME_VERSION, MIN_VOLUME_VERSION, requestedVersion, type VolumeVersion } from '../../volume/microversion.js'
import { callerOf } from '../../volume/service.js'
import type { ViewContext } from '../../volume/view.js'
import { quotaRoutes } from './quota-routes.js'
import { serviceRoutes } from './service-routes.js'
import { messageRoutes } from './message-routes.js'
import { snapshotRoutes } from './snapshot-routes.js'
import { backupRoutes } from './backup-routes.js'
import { transferRoutes } from './transfer-routes.js'
import { volumeTypeRoutes } from './type-routes.js'
import { defaultTypeRoutes } from './default-type-routes.js'
import { qosRoutes } from './qos-routes.js'
import { groupRoutes } from './group-routes.js'
import { typeEncryptionRoutes } from './encryption-routes.js'
import { volumeResourceRoutes } from './volume-routes.js'
import { addDocs, documented, OPEN } from '../../http/openapi.js'
import { A, VOLUME_HEADERS } from './answers.js'
import { allows } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'

declare module 'fastify' {
  interface FastifyRequest {
    volumeVersion: VolumeVersion
  }
}

function versionDoc(deps: AppDeps) {
  return {
    id: 'v3.0',
    status: 'CURRENT',
    version: MAX_VOLUME_VERSION,
    min_version: MIN_VOLUME_VERSION,
    updated: '2023-01-01T00:00:00Z',
    links: [
      { rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' },
      { rel: 'self', href: `${deps.urls.volume}/` },
    ],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.volume+json;version=3' }],
  }
}

export function volumeRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    // cinderclient and keystoneauth read the unversioned root; Cinder answers it with 300.
    scope.get('/', documented({ ...OPEN, summary: 'Block storage API versions', response: { 300: A.versions } }), async (_request, reply) => reply.code(300).send({ versions: [versionDoc(deps)] }))

    const v3 = async (api: FastifyInstance): Promise<void> => {
      api.get('/', documented({ ...OPEN, summary: 'The block storage API v3 and its microversion range', response: { 200: A.versions } }), async () => ({ versions: [versionDoc(deps)] }))

      await api.register(async (r) => {
        r.decorateRequest('volumeVersion', null as unknown as VolumeVersion)
        r.addHook('onRoute', (route) => addDocs(route, { headers: VOLUME_HEADERS }))
        // Callback-style hooks: a promise per hook and request is measurable on small requests.
        r.addHook('onRequest', (request, reply, done) => {
          try {
            request.volumeVersion = requestedVersion(request.headers['openstack-api-version'])
          } catch (err) {
            return done(err as Error)
          }
          reply.header('openstack-api-version', `volume ${formatVersion(request.volumeVersion)}`).header('vary', 'OpenStack-API-Version')
          done()
        })
        r.addHook('onRequest', authHook(deps.tokens, deps.urls.identity))
        r.addHook('preHandler', (request, _reply, done) => {
          const pathProject = (request.params as { project_id?: string }).project_id
          if (pathProject !== undefined && !allows(volumePolicy, 'url:other_project', request.principal) && callerOf(request.principal).projectId !== pathProject) {
            return done(badRequest('Malformed request url: the project in the path is not the project of the token.'))
          }
          done()
        })
        const ctx = (request: FastifyRequest): ViewContext => ({ version: request.volumeVersion, isAdmin: request.principal.roles.includes('admin'), baseUrl: deps.urls.volume })

        volumeResourceRoutes(r, deps, ctx)
        snapshotRoutes(r, deps, ctx)
        backupRoutes(r, deps, ctx)
        transferRoutes(r, deps, ctx)
        volumeTypeRoutes(r, deps, ctx)
        defaultTypeRoutes(r, deps)
        qosRoutes(r, deps, ctx)
        groupRoutes(r, deps, ctx)
        typeEncryptionRoutes(r, deps)
        quotaRoutes(r, deps, ctx)
        serviceRoutes(r, deps)
        messageRoutes(r, deps)
      })
    }

    await scope.register(v3, { prefix: '/v3' })
    await scope.register(v3, { prefix: '/v3/:project_id' })
  }
}
