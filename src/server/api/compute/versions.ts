/**
 * Version documents, without authentication: `GET /compute/` lists v2.0 then v2.1 (200, no version headers);
 * `GET /compute/v2.1[/]` describes v2.1 and goes through microversion processing (headers, 406).
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { MAX_VERSION, MIN_VERSION } from '../../../contracts/compute/versions.js'
import { microversionHook } from './context.js'
import { documented, OPEN } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'

export function versionDocuments(deps: AppDeps) {
  const base = deps.urls.compute.replace(/\/v2\.1$/, '')
  const v20 = { id: 'v2.0', status: 'SUPPORTED', version: '', min_version: '', updated: '2011-01-21T11:33:21Z', links: [{ rel: 'self', href: `${base}/v2/` }] }
  const v21 = { id: 'v2.1', status: 'CURRENT', version: MAX_VERSION, min_version: MIN_VERSION, updated: '2013-07-23T11:33:21Z', links: [{ rel: 'self', href: `${base}/v2.1/` }] }
  const describedBy = { rel: 'describedby', type: 'text/html', href: 'http://docs.openstack.org/' }
  return {
    root: { versions: [v20, v21] },
    v21: { version: { ...v21, links: [...v21.links, describedBy], 'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.compute+json;version=2.1' }] } },
    v20: { version: { ...v20, links: [...v20.links, describedBy], 'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.compute+json;version=2' }] } },
  }
}

const DOCS = {
  root: documented({ ...OPEN, summary: 'Compute API versions', response: { 200: A.versionList } }),
  version: documented({ ...OPEN, summary: 'The compute API v2.1 and its microversion range', response: { 200: A.version } }),
  legacy: documented({ ...OPEN, summary: 'The compute API v2.0', response: { 200: A.version } }),
}

export function versionRoutes(deps: AppDeps) {
  const docs = versionDocuments(deps)
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/', DOCS.root, async () => docs.root)
    for (const url of ['/v2.1', '/v2.1/']) scope.get(url, { onRequest: microversionHook, ...DOCS.version }, async () => docs.v21)
    for (const url of ['/v2', '/v2/']) scope.get(url, DOCS.legacy, async () => docs.v20)
  }
}
