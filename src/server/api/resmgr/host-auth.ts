/** The agent's authentication on resource-manager routes: its host credential, acting only for its own host. */
import type { FastifyRequest } from 'fastify'
import { forbidden } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'

/** An onRequest hook: `Authorization: Bearer <host credential>` of the host named by the `:id` route parameter. */
export function hostAuth(deps: Pick<AppDeps, 'onboarding'>) {
  return async (request: FastifyRequest<{ Params: { id: string } }>): Promise<void> => {
    const authorization = request.headers.authorization
    const credential = authorization && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : undefined
    const hostId = await deps.onboarding.authenticateHost(credential)
    if (request.params.id.toLowerCase() !== hostId) throw forbidden('A host credential acts only for its own host.')
  }
}
