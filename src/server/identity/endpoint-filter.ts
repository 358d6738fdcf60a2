/**
 * OS-EP-FILTER's rules (Keystone's): an endpoint group matches the endpoints whose service, interface and region
 * equal every filter it gives; a project's endpoints are those associated with it directly and those of the
 * endpoint groups associated with it. A project with none sees the whole catalog (Keystone's default,
 * `return_all_endpoints_if_no_filter`); one with some sees only those (docs/identity.md, "Endpoint filtering").
 */
import { badRequest } from '../../contracts/errors.js'

export const FILTER_KEYS = ['service_id', 'interface', 'region_id'] as const
export type EndpointFilters = Partial<Record<(typeof FILTER_KEYS)[number], string>>

export interface FilterableEndpoint {
  id: string
  serviceId: string
  interface: string
  regionId: string | null
}

/** Refuses a filter Keystone does not know. */
export function checkFilters(filters: Record<string, unknown>): EndpointFilters {
  for (const key of Object.keys(filters)) {
    if (!(FILTER_KEYS as readonly string[]).includes(key)) throw badRequest(`Invalid endpoint group filter ${key}: only ${FILTER_KEYS.join(', ')} may be given.`)
  }
  return filters as EndpointFilters
}

export function endpointMatches(filters: EndpointFilters, e: FilterableEndpoint): boolean {
  return (
    (filters.service_id === undefined || filters.service_id === e.serviceId) &&
    (filters.interface === undefined || filters.interface === e.interface) &&
    (filters.region_id === undefined || filters.region_id === e.regionId)
  )
}

/**
 * The endpoint ids each project is narrowed to (projects without associations are absent: they see every
 * endpoint).
 */
export function projectEndpointSets(
  endpoints: readonly FilterableEndpoint[],
  groups: readonly { id: string; filters: EndpointFilters }[],
  groupAssociations: readonly { endpoint_group_id: string; project_id: string }[],
  endpointAssociations: readonly { endpoint_id: string; project_id: string }[],
): Map<string, Set<string>> {
  const byProject = new Map<string, Set<string>>()
  const setOf = (projectId: string) => {
    let set = byProject.get(projectId)
    if (!set) byProject.set(projectId, (set = new Set()))
    return set
  }
  for (const a of endpointAssociations) setOf(a.project_id).add(a.endpoint_id)
  const groupById = new Map(groups.map((g) => [g.id, g]))
  for (const a of groupAssociations) {
    const group = groupById.get(a.endpoint_group_id)
    const set = setOf(a.project_id)
    if (group) for (const e of endpoints) if (endpointMatches(group.filters, e)) set.add(e.id)
  }
  return byProject
}
