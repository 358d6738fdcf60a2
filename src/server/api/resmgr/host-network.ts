/**
 * The agents' guest-networking calls under {base}/resmgr/v1/hosts/{id}, authenticated by the host credential
 * (a host acts only for itself: 403 for another host id; identity tokens 401):
 *
 * - `GET …/network?known=<hash>&wait=<s ≤ 30>`: what the host's data plane must be (contracts/network/dataplane.ts)
 *   as `{hash, state}`, at once when its hash differs from `known`, else as soon as it changes; 204 when `wait`
 *   seconds passed with nothing new.
 * - `GET …/metadata/{port_id}/<path>`: what the guest of that port reads at `http://169.254.169.254/<path>`
 *   (the agent proxies guests' requests here); 404 unless the port is a guest port bound to this host.
 * - `POST …/metadata/{port_id}/openstack/<version>/password` (`application/octet-stream`): the password that
 *   guest posts, stored for the port's server (metadata/password.ts): 200, 409 while one is stored, 400 too long;
 *   405 for any other path. Same port check as the GET: a host posts for the guests bound to it only.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { hostAuth } from './host-auth.js'
import { documented, HOST_CREDENTIAL, mediaAnswer, noBody } from '../../http/openapi.js'

const hostParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 } }, required: ['id'] }
const metadataParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 }, portId: { type: 'string', maxLength: 64 }, '*': { type: 'string', maxLength: 1024 } }, required: ['id', 'portId'] }
/** What a guest may post, read whole; the service takes far less (a password: metadata/password.ts). */
const POST_LIMIT_BYTES = 16 * 1024

export function hostNetworkRoutes(deps: AppDeps) {
  const requireHost = hostAuth(deps)
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Params: { id: string }; Querystring: { known?: string; wait?: number } }>(
      '/v1/hosts/:id/network',
      {
        onRequest: requireHost,
        schema: {
          tags: ['resmgr'],
          params: hostParams,
          querystring: { type: 'object', additionalProperties: false, properties: { known: { type: 'string', maxLength: 64 }, wait: { type: 'number', minimum: 0, maximum: 30 } } },
        },
        ...documented({
          ...HOST_CREDENTIAL,
          summary: "What the host's data plane must be, when it differs from `known` (waiting up to `wait` seconds)",
          response: { 200: { type: 'object', properties: { hash: { type: 'string' }, state: { type: 'object' } }, required: ['hash', 'state'] }, 204: noBody('Nothing new within `wait` seconds') },
        }),
      },
      async (request, reply) => {
        const abort = new AbortController()
        request.raw.once('close', () => abort.abort())
        const answer = await deps.dataplane.watch(request.params.id.toLowerCase(), request.query.known ?? '', (request.query.wait ?? 0) * 1000, abort.signal)
        if (!answer) return reply.code(204).send()
        reply.header('cache-control', 'no-store')
        return answer
      },
    )

    scope.get<{ Params: { id: string; portId: string; '*': string } }>(
      '/v1/hosts/:id/metadata/:portId/*',
      {
        onRequest: requireHost,
        schema: {
          tags: ['resmgr'],
          params: metadataParams,
        },
        ...documented({
          ...HOST_CREDENTIAL,
          summary: 'The metadata service, for a guest behind one of the host\'s ports (the path after the port is the guest\'s: /openstack/…, /latest/meta-data/…)',
          response: { 200: mediaAnswer('application/octet-stream', 'The document asked for, in its own media type (JSON or text)') },
        }),
      },
      async (request, reply) => {
        const answer = await deps.dataplane.metadata(request.params.id.toLowerCase(), request.params.portId.toLowerCase(), `/${request.params['*'] ?? ''}`)
        return reply.code(answer.status).header('content-type', answer.contentType).header('cache-control', 'no-store').send(answer.body)
      },
    )

    await scope.register(async (posts) => {
      posts.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: POST_LIMIT_BYTES }, (_request, body, done) => done(null, body))
      posts.post<{ Params: { id: string; portId: string; '*': string }; Body: Buffer | undefined }>(
        '/v1/hosts/:id/metadata/:portId/*',
        {
          onRequest: requireHost,
          schema: { tags: ['resmgr'], params: metadataParams },
          ...documented({
            ...HOST_CREDENTIAL,
            summary: "A guest's post to the metadata service, for a guest behind one of the host's ports: its password at /openstack/<version>/password (once until cleared)",
            consumes: ['application/octet-stream'],
            body: { type: 'string', format: 'binary' },
            response: { 200: mediaAnswer('text/plain', 'Stored (an empty body)') },
          }),
        },
        async (request, reply) => {
          const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
          const answer = await deps.dataplane.metadata(request.params.id.toLowerCase(), request.params.portId.toLowerCase(), `/${request.params['*'] ?? ''}`, body)
          return reply.code(answer.status).header('content-type', answer.contentType).header('cache-control', 'no-store').send(answer.body)
        },
      )
    })
  }
}
