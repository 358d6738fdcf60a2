/** /v3/projects, their tags, and /v3/users/{id}/projects. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type as T, type Static } from '@sinclair/typebox'
import { badRequest, notFound } from '../../../../contracts/errors.js'
import { DEFAULT_DOMAIN_ID } from '../../../bootstrap/bootstrap.js'
import * as projects from '../../../identity/repo/projects.repo.js'
import * as domains from '../../../identity/repo/domains.repo.js'
import { getUser } from '../../../identity/repo/users.repo.js'
import { projectIdsOfUser } from '../../../identity/repo/assignments.repo.js'
import { listDomainFor } from '../../../policy/identity.policy.js'
import { collection, guard, queryFlag, queryList, type AdminContext } from './common.js'
import { ProjectCreate, ProjectUpdate, Tag, TagsBody, query } from './schemas.js'
import { domainAsProjectView, projectView } from './views.js'
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

  // Keystone's domains are projects acting as domains: the projects API shows, creates, updates and deletes them
  // too (`is_domain: true`), with the domain API's policy.
  scope.get<{ Querystring: ListQuery }>('/projects', { ...documented({ summary: 'List projects (and domains acting as projects)', response: { 200: list('projects', V.project) } }), schema: { querystring: listQuery } }, async (request) => {
    const q = request.query
    if (queryFlag(q.is_domain) === true) {
      guard(request, 'identity:list_domains')
      const rows = await domains.listDomains(ctx.db, { name: q.name, enabled: queryFlag(q.enabled) })
      return collection(ctx, request, 'projects', rows.map((d) => domainAsProjectView(ctx, d)))
    }
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
    const domain = await domains.findDomain(ctx.db, request.params.id)
    if (domain) {
      guard(request, 'identity:get_domain', { domainId: domain.id })
      return { project: domainAsProjectView(ctx, domain) }
    }
    const row = await projects.getProject(ctx.db, request.params.id)
    guard(request, 'identity:get_project', { domainId: row.domain_id, projectId: row.id })
    return { project: projectView(ctx, row) }
  })

  scope.post<{ Body: Static<typeof ProjectCreate> }>('/projects', { ...documented({ summary: 'Create a project', response: { 201: one('project', V.project) } }), schema: { body: ProjectCreate } }, async (request, reply) => {
    const body = request.body.project
    if (body.is_domain === true) {
      if (body.domain_id || body.parent_id) throw badRequest("Invalid input for field 'is_domain': a project acting as a domain has no domain_id and no parent_id.")
      guard(request, 'identity:create_domain')
      const { is_domain: _isDomain, domain_id: _domainId, parent_id: _parentId, tags: _tags, ...domain } = body
      const row = await ctx.write((tx) => domains.createDomain(tx, domain, ctx.now()))
      return reply.code(201).send({ project: domainAsProjectView(ctx, row) })
    }
    const parent = body.parent_id ? await projects.findProject(ctx.db, body.parent_id) : undefined
    const domainId = body.domain_id ?? parent?.domain_id ?? defaultDomain(request)
    guard(request, 'identity:create_project', { domainId })
    const row = await ctx.write((tx) => projects.createProject(tx, body, domainId, ctx.now()))
    return reply.code(201).send({ project: projectView(ctx, row) })
  })

  scope.patch<IdParams & { Body: Static<typeof ProjectUpdate> }>('/projects/:id', { ...documented({ summary: 'Update a project', response: { 200: one('project', V.project) } }), schema: { body: ProjectUpdate } }, async (request) => {
    if (await domains.findDomain(ctx.db, request.params.id)) {
      guard(request, 'identity:update_domain', { domainId: request.params.id })
      const { is_domain: isDomain, domain_id: domainId, parent_id: parentId, tags: _tags, ...change } = request.body.project
      if (isDomain === false || domainId || parentId) throw badRequest("Invalid input: a project acting as a domain keeps is_domain, and has no domain_id and no parent_id.")
      return { project: domainAsProjectView(ctx, await ctx.write((tx) => domains.updateDomain(tx, request.params.id, change))) }
    }
    const current = await projects.getProject(ctx.db, request.params.id)
    guard(request, 'identity:update_project', { domainId: current.domain_id, projectId: current.id })
    const row = await ctx.write((tx) => projects.updateProject(tx, request.params.id, request.body.project))
    return { project: projectView(ctx, row) }
  })

  scope.delete<IdParams>('/projects/:id', documented({ summary: 'Delete a project', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    if (await domains.findDomain(ctx.db, request.params.id)) {
      guard(request, 'identity:delete_domain', { domainId: request.params.id })
      await ctx.write((tx) => domains.deleteDomain(tx, request.params.id))
      return reply.code(204).send()
    }
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
