/** /os-simple-tenant-usage: server hours and resource-hours per project over a period. */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { isoMicros } from '../../../contracts/compute/time.js'
import type { AppDeps } from '../../deps.js'
import type { ServerTable } from '../../storage/schema.js'
import { parseFlavor } from '../../compute/server-model.js'
import { serversLivingIn } from '../../compute/server-rows.js'
import { must } from './context.js'
import { documented } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, listOf, Q, queryOf } from '../../../contracts/compute/schemas.js'
import type { SingleQuery } from '../../http/route-types.js'

function parseTime(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d{1,6})?$/.exec(raw)
  if (!m) throw badRequest(`Invalid ${name} time. The time must be in the format "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f" or "%Y-%m-%d %H:%M:%S.%f".`)
  return Date.parse(`${m[1]}T${m[2]}${(m[3] ?? '').slice(0, 4)}Z`)
}

const period = { start: Q.time, end: Q.time }
const DOCS = {
  list: documented({ summary: 'Usage of every project over a period (admin)', querystring: queryOf({ ...period, detailed: { type: 'string', enum: ['0', '1'] } }), response: { 200: envelope('tenant_usages', listOf(A.usage)) } }),
  show: documented({ summary: "A project's usage over a period", querystring: queryOf(period), response: { 200: envelope('tenant_usage', { anyOf: [A.usage, { type: 'object', maxProperties: 0 }] }) } }),
}

export function usageRoutes(deps: AppDeps) {
  const db = deps.store.db
  const period = (request: FastifyRequest<{ Querystring: SingleQuery }>) => {
    const q = request.query
    const now = Date.now()
    const start = parseTime('start', q.start, now)
    const end = parseTime('end', q.end, now)
    if (start > end) throw badRequest('Invalid start time. The start time cannot occur after the end time.')
    return { start, end, detailed: q.detailed === '1' }
  }
  const usageOf = (projectId: string, rows: ServerTable[], start: number, end: number, withServers: boolean) => {
    let hoursTotal = 0
    let vcpuHours = 0
    let ramHours = 0
    let diskHours = 0
    const servers = rows.map((r) => {
      const f = parseFlavor(r.flavor)
      const from = Math.max(r.launched_at ?? r.created_at, start)
      const to = Math.min(r.terminated_at ?? r.deleted_at ?? end, end)
      const hours = Math.max(0, to - from) / 3600_000
      hoursTotal += hours
      vcpuHours += hours * f.vcpus
      ramHours += hours * f.ram
      diskHours += hours * (f.disk + f.ephemeral)
      return {
        instance_id: r.id,
        name: r.name,
        hours,
        memory_mb: f.ram,
        local_gb: f.disk + f.ephemeral,
        vcpus: f.vcpus,
        tenant_id: r.project_id,
        flavor: f.name,
        started_at: isoMicros(r.launched_at ?? r.created_at),
        ended_at: isoMicros(r.terminated_at ?? r.deleted_at),
        state: r.deleted ? 'terminated' : r.vm_state,
        uptime: Math.round(Math.max(0, (r.deleted_at ?? Date.now()) - (r.launched_at ?? r.created_at)) / 1000),
      }
    })
    return {
      tenant_id: projectId,
      total_local_gb_usage: diskHours,
      total_vcpus_usage: vcpuHours,
      total_memory_mb_usage: ramHours,
      total_hours: hoursTotal,
      start: isoMicros(start),
      stop: isoMicros(end),
      ...(withServers ? { server_usages: servers } : {}),
    }
  }
  const rowsIn = (start: number, end: number, projectId?: string) => serversLivingIn(db, start, end, projectId)
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<{ Querystring: SingleQuery }>('/v2.1/os-simple-tenant-usage', DOCS.list, async (request) => {
      must(request, 'usage:list')
      const { start, end, detailed } = period(request)
      const rows = await rowsIn(start, end)
      const byProject = new Map<string, ServerTable[]>()
      for (const r of rows) byProject.set(r.project_id, [...(byProject.get(r.project_id) ?? []), r])
      return { tenant_usages: [...byProject.entries()].map(([p, list]) => usageOf(p, list, start, end, detailed)) }
    })
    scope.get<{ Params: { projectId: string }; Querystring: SingleQuery }>('/v2.1/os-simple-tenant-usage/:projectId', DOCS.show, async (request) => {
      // `…/os-simple-tenant-usage/` names no project: Nova's router has no such route.
      if (request.params.projectId === '') throw notFound('The resource could not be found.')
      must(request, 'usage:show', { projectId: request.params.projectId })
      const { start, end } = period(request)
      const rows = await rowsIn(start, end, request.params.projectId)
      return { tenant_usage: rows.length ? usageOf(request.params.projectId, rows, start, end, true) : {} }
    })
  }
}
