/** /v3/projects, their tags, and /v3/users/{id}/projects. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T, type Static } from '@sinclair/typebox'
import { badRequest, notFound } from '../../../../contracts/errors.js'
import { DEFAULT_DOMAIN_ID } from '../../../bootstrap/bootstrap.js'
import * as projects from '../../../identity/repo/projects.repo.js'
import { getUser } from '../../../identity/repo/users.repo.js'
import { projectIdsOfUser } from '../../../identity/repo/assignments.repo.js'
import { listDomainFor } from '../../../policy/identity.policy.js'
import { collection, guard, queryFlag, queryList, type AdminContext } from './common.js'
import { ProjectCreate, ProjectUpdate, Tag, TagsBody, query } from './schemas.js'
import { projectView } from './views.js'
import { documented, noBody } from '../../../http/openapi.js'
import { A, V, list, one } from '../answers.js'

type IdParams = { Params: { id: string } }
type ListQuery = Record<'name' | 'domain_id' | 'parent_id' | 'enabled' | 'is_domain' | 'tags' | 'tags-any' | 'not-tags' | 'not-tags-any', string | undefined>

/** The domain a new project goes to when the body names none: the caller's own (Keystone's default). */
function defaultDomain(request: FastifyRequest): string {
  const s = request.principal.scope
  return s.type === 'project' || s.type === 'domain' ? s.domainId : DEFAULT_DOMAIN_ID
}

export function projectRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  const listQuery = query(['name', 'domain_id', 'parent_id', 'enabled', 'is_domain', 'tags', 'tags-any', 'not-tags', 'not-tags-any'])

  scope.get<{ Querystring: ListQuery }>('/projects', { ...documented({ summary: 'List projects', response: { 200: list('projects', V.project) } }), schema: { querystring: listQuery } }, async (request) => {
    const q = request.query
    const domainId = listDomainFor(request.principal, q.domain_id)
    guard(request, 'identity:list_projects', { domainId })
    const rows = await projects.listProjects(ctx.db, {
      name: q.name,
      domainId,
      parentId: q.parent_id,
      enabled: queryFlag(q.enabled),
      isDomain: queryFlag(q.is_domain),
      tags: queryList(q.tags),
      tagsAny: queryList(q['tags-any']),
      notTags: queryList(q['not-tags']),
      notTagsAny: queryList(q['not-tags-any']),
    })
    return collection(ctx, request, 'projects', rows.map((p) => projectView(ctx, p)))
  })

  scope.get<IdParams>('/projects/:id', documented({ summary: 'Show a project', response: { 200: one('project', V.project) } }), async (request) => {
    const row = await projects.getProject(ctx.db, request.params.id)
    guard(request, 'identity:get_project', { domainId: row.domain_id, projectId: row.id })
    return { project: projectView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof ProjectCreate> }>('/projects', { ...documented({ summary: 'Create a project', response: { 201: one('project', V.project) } }), schema: { body: ProjectCreate } }, async (request, reply) => {
    const body = request.body.project
    const parent = body.parent_id ? await projects.findProject(ctx.db, body.parent_id) : undefined
    const domainId = body.domain_id ?? parent?.domain_id ?? defaultDomain(request)
    guard(request, 'identity:create_project', { domainId })
    const row = await ctx.write((tx) => projects.createProject(tx, body, domainId, ctx.now()))
    return reply.code(201).send({ project: projectView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof ProjectUpdate> }>('/projects/:id', { ...documented({ summary: 'Update a project', response: { 200: one('project', V.project) } }), schema: { body: ProjectUpdate } }, async (request) => {
    const current = await projects.getProject(ctx.db, request.params.id)
    guard(request, 'identity:update_project', { domainId: current.domain_id, projectId: current.id })
    const row = await ctx.write((tx) => projects.updateProject(tx, request.params.id, request.body.project))
    return { project: projectView(ctx, row) }
  })

  scope.delete<IdParams>('/projects/:id', documented({ summary: 'Delete a project', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    const current = await projects.getProject(ctx.db, request.params.id)
    guard(request, 'identity:delete_project', { domainId: current.domain_id, projectId: current.id })
    await ctx.write((tx) => projects.deleteProject(tx, request.params.id))
    return reply.code(204).send()
  })

  // Tags sub-resource.
  const tagTarget = async (request: FastifyRequest<IdParams>, operation: 'identity:list_project_tags' | 'identity:update_project_tags') => {
    const project = await projects.getProject(ctx.db, request.params.id)
    guard(request, operation, { domainId: project.domain_id, projectId: project.id })
    return project
  }

  scope.get<IdParams>('/projects/:id/tags', documented({ summary: "A project's tags", response: { 200: A.tags } }), async (request) => ({ tags: (await tagTarget(request, 'identity:list_project_tags')).tags }))

  scope.put<IdParams & { Body: Static<typeof TagsBody> }>('/projects/:id/tags', { ...documented({ summary: "Replace a project's tags", response: { 200: A.tags } }), schema: { body: TagsBody } }, async (request) => {
    await tagTarget(request, 'identity:update_project_tags')
    await ctx.write((tx) => projects.setTags(tx, request.params.id, request.body.tags))
    return { tags: (await projects.getProject(ctx.db, request.params.id)).tags }
  })

  scope.delete<IdParams>('/projects/:id/tags', documented({ summary: "Remove every tag of a project", response: { 204: noBody('Removed') } }), async (request, reply) => {
    await tagTarget(request, 'identity:update_project_tags')
    await ctx.write((tx) => projects.setTags(tx, request.params.id, []))
    return reply.code(204).send()
  })

  type TagParams = { Params: { id: string; tag: string } }
  const tagParams = T.Object({ id: T.String(), tag: Tag })

  scope.route<TagParams>({
    method: ['GET', 'HEAD'],
    url: '/projects/:id/tags/:tag',
    ...documented({ summary: 'Check a tag of a project', response: { 204: noBody('Tagged') } }),
    schema: { params: tagParams },
    handler: async (request, reply) => {
      const project = await tagTarget(request, 'identity:list_project_tags')
      if (!project.tags.includes(request.params.tag)) throw notFound(`Tag ${request.params.tag} not found on project ${project.id}.`)
      return reply.code(204).send()
    },
  })

  scope.put<TagParams>('/projects/:id/tags/:tag', { ...documented({ summary: 'Add a tag to a project', response: { 201: noBody('Tagged') } }), schema: { params: tagParams } }, async (request, reply) => {
    const project = await tagTarget(request, 'identity:update_project_tags')
    if (!project.tags.includes(request.params.tag)) {
      if (project.tags.length >= 80) throw badRequest(`Invalid input for field 'tag': project ${project.id} already has 80 tags.`)
      await ctx.write((tx) => projects.setTags(tx, project.id, [...project.tags, request.params.tag]))
    }
    return reply.code(201).header('location', `${ctx.deps.urls.identity}/projects/${project.id}/tags/${encodeURIComponent(request.params.tag)}`).send()
  })

  scope.delete<TagParams>('/projects/:id/tags/:tag', documented({ summary: 'Remove a tag from a project', response: { 204: noBody('Removed') } }), async (request, reply) => {
    const project = await tagTarget(request, 'identity:update_project_tags')
    if (!project.tags.includes(request.params.tag)) throw notFound(`Tag ${request.params.tag} not found on project ${project.id}.`)
    await ctx.write((tx) => projects.setTags(tx, project.id, project.tags.filter((t) => t !== request.params.tag)))
    return reply.code(204).send()
  })

  scope.get<IdParams>('/users/:id/projects', documented({ summary: "The projects a user has a role on", response: { 200: list('projects', V.project) } }), async (request) => {
    const user = await getUser(ctx.db, request.params.id)
    guard(request, 'identity:list_user_projects', { userId: user.id, domainId: user.domain_id })
    const rows = await projects.listProjects(ctx.db, { ids: await projectIdsOfUser(ctx.db, user.id) })
    return collection(ctx, request, 'projects', rows.map((p) => projectView(ctx, p)))
  })
}
