/** User messages (3.3+): why a project's volume or snapshot operation failed (volume/messages.ts). */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from '../../../contracts/errors.js'
import type { AppDeps } from '../../deps.js'
import { authorize } from '../../policy/rules.js'
import { volumePolicy } from '../../policy/volume.policy.js'
import { deleteMessage, getMessage, listMessages, type MessageRecord } from '../../volume/messages.js'
import { atLeast } from '../../volume/microversion.js'
import { cinderTime } from '../../volume/model.js'
import { callerOf } from '../../volume/service.js'
import { idParams, type IdRoute } from './params.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'

const SINCE = '3.3'

function messageView(m: MessageRecord, baseUrl: string): Record<string, unknown> {
  return {
    id: m.id,
    request_id: m.requestId,
    message_level: m.level,
    event_id: m.eventId,
    user_message: m.userMessage,
    resource_type: m.resourceType,
    ...(m.resourceUuid ? { resource_uuid: m.resourceUuid } : {}),
    created_at: cinderTime(m.createdAt),
    guaranteed_until: cinderTime(m.expiresAt),
    links: [{ rel: 'self', href: `${baseUrl}/v3/${m.projectId}/messages/${m.id}` }],
  }
}

export function messageRoutes(r: FastifyInstance, deps: AppDeps): void {
  const { db } = deps.store
  // Before 3.3 the API has no messages, as Cinder answers.
  const reader = (request: FastifyRequest, operation: 'message:get' | 'message:delete') => {
    if (!atLeast(request.volumeVersion, SINCE)) throw new AppError('not_found', 'The messages API needs microversion 3.3 or later.')
    const caller = callerOf(request.principal)
    authorize(volumePolicy, operation, request.principal, { projectId: caller.projectId })
    return { projectId: caller.projectId, visibility: caller.visibility }
  }
  r.get('/messages', documented({ summary: "Why the project's volume operations failed (3.3+)", response: { 200: A.messages } }), async (request) => ({
    messages: (await listMessages(db, reader(request, 'message:get'))).map((m) => messageView(m, deps.urls.volume)),
  }))
  r.get<IdRoute>('/messages/:id', { schema: { params: idParams }, ...documented({ summary: 'One user message (3.3+)', response: { 200: A.message } }) }, async (request) => ({
    message: messageView(await getMessage(db, reader(request, 'message:get'), request.params.id), deps.urls.volume),
  }))
  r.delete<IdRoute>('/messages/:id', { schema: { params: idParams }, ...documented({ summary: 'Delete a user message (3.3+)', response: { 204: noBody('Deleted') } }) }, async (request, reply) => {
    await deleteMessage(db, reader(request, 'message:delete'), request.params.id)
    return reply.code(204).send()
  })
}
