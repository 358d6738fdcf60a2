/**
 * Support-bundle keys: the public key is open (hosts encrypt their bundles with it); the private key is for
 * admins only, to decrypt the bundles customers send.
 */
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { authHook } from '../../auth/http-auth.js'
import { authorize, isAdmin } from '../../policy/rules.js'
import { ensureSupportKeys, type SupportKeys } from '../../support/support-key.js'
import { mediaAnswer } from '../../http/openapi.js'

const SUPPORT_POLICY = { 'resmgr:support:private_key': isAdmin }

export function supportRoutes(deps: AppDeps) {
  return async (scope: FastifyInstance): Promise<void> => {
    let keys: Promise<SupportKeys> | undefined
    const supportKeys = () => (keys ??= ensureSupportKeys(deps.store, deps.box))
    const key = (which: string) => ({ summary: `The support-bundle ${which} key`, tags: ['resmgr'], security: which === 'public' ? [] : undefined, response: { 200: mediaAnswer('application/pgp-keys', `An armored OpenPGP ${which} key`) } })
    scope.get('/v1/support/public-key', { schema: key('public') }, async (_request, reply) => reply.type('application/pgp-keys').send((await supportKeys()).publicKey))
    scope.get('/v1/support/private-key', { schema: key('private'), onRequest: authHook(deps.tokens, deps.urls.identity) }, async (request, reply) => {
      authorize(SUPPORT_POLICY, 'resmgr:support:private_key', request.principal)
      return reply.type('application/pgp-keys').send(await (await supportKeys()).privateKey())
    })
  }
}
