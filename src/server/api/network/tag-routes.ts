/**
 * Neutron's tag sub-resource (`standard-attr-tag`), which openstackclient uses for `--tag`/`--no-tag`:
 * GET/PUT/DELETE `/{resources}/{id}/tags` and GET/PUT/DELETE `/{resources}/{id}/tags/{tag}`. Changes go
 * through the resource's own update, so visibility (404) and policy (403) are the resource's.
 */
import type { FastifyInstance } from 'fastify'
import type { Actor, NetCtx } from '../../network/context.js'
import { neutron } from '../../network/errors.js'
import type { NetworkService } from '../../network/service.js'
import type { View } from '../../network/views.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from './answers.js'
import type { FromSchema } from '../../http/route-types.js'

export interface TaggedResource {
  path: string
  show: (ctx: NetCtx, actor: Actor, id: string) => Promise<View>
  update: (ctx: NetCtx, actor: Actor, id: string, body: { tags: string[] }) => Promise<View>
}

const tagsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['tags'],
  properties: { tags: { type: 'array', maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^,]*$' } } },
} as const
const tagParam = { type: 'object', properties: { id: { type: 'string' }, tag: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^,]*$' } } }

type Params = { id: string; tag: string }

export function tagRoutes(api: FastifyInstance, service: NetworkService, resources: TaggedResource[]): void {
  for (const r of resources) {
    const base = `/v2.0/${r.path}/:id/tags`
    const tagsOf = async (ctx: NetCtx, actor: Actor, id: string) => (await r.show(ctx, actor, id)).tags as string[]
    const setTags = async (ctx: NetCtx, actor: Actor, id: string, tags: string[]) => (await r.update(ctx, actor, id, { tags: [...new Set(tags)] })).tags as string[]

    const what = r.path.replaceAll('-', ' ')
    api.get<{ Params: Params }>(base, documented({ summary: `Tags of ${what}`, response: { 200: A.tags } }), async (req) => ({ tags: await service.run(req.principal, (ctx, actor) => tagsOf(ctx, actor, req.params.id)) }))
    api.put<{ Params: Params; Body: FromSchema<typeof tagsBody> }>(base, { schema: { body: tagsBody }, ...documented({ summary: `Replace the tags of ${what}`, response: { 200: A.tags } }) }, async (req) => ({
      tags: await service.run(req.principal, (ctx, actor) => setTags(ctx, actor, req.params.id, req.body.tags)),
    }))
    api.delete<{ Params: Params }>(base, documented({ summary: `Remove every tag of ${what}`, response: { 204: noBody('Removed') } }), async (req, reply) => {
      await service.run(req.principal, (ctx, actor) => setTags(ctx, actor, req.params.id, []))
      return reply.code(204).send()
    })
    api.get<{ Params: Params }>(`${base}/:tag`, { schema: { params: tagParam }, ...documented({ summary: `Check a tag of ${what}`, response: { 204: noBody('Tagged') } }) }, async (req, reply) => {
      const tags = await service.run(req.principal, (ctx, actor) => tagsOf(ctx, actor, req.params.id))
      if (!tags.includes(req.params.tag)) throw neutron.notFound('TagNotFound', `Tag ${req.params.tag} could not be found for ${r.path} ${req.params.id}.`)
      return reply.code(204).send()
    })
    api.put<{ Params: Params }>(`${base}/:tag`, { schema: { params: tagParam }, ...documented({ summary: `Add a tag to ${what}`, response: { 201: noBody('Tagged') } }) }, async (req, reply) => {
      // Through the update even when the tag is there: its policy decides, so a project that may only see the
      // resource (a shared network) gets 403 here too (it got 201; found by the fuzz suite).
      await service.run(req.principal, async (ctx, actor) => setTags(ctx, actor, req.params.id, [...(await tagsOf(ctx, actor, req.params.id)), req.params.tag]))
      return reply.code(201).send()
    })
    api.delete<{ Params: Params }>(`${base}/:tag`, { schema: { params: tagParam }, ...documented({ summary: `Remove a tag from ${what}`, response: { 204: noBody('Removed') } }) }, async (req, reply) => {
      await service.run(req.principal, async (ctx, actor) => {
        const tags = await tagsOf(ctx, actor, req.params.id)
        if (!tags.includes(req.params.tag)) throw neutron.notFound('TagNotFound', `Tag ${req.params.tag} could not be found for ${r.path} ${req.params.id}.`)
        await setTags(ctx, actor, req.params.id, tags.filter((t) => t !== req.params.tag))
      })
      return reply.code(204).send()
    })
  }
}
