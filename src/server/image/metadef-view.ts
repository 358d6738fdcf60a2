/** Glance v2 wire shapes of metadata definitions. Glance leaves out the optional fields that are not set. */
import { glanceTime } from './model.js'
import type { NamespaceRow } from './metadefs.js'
import type { MetadefNamespaceResourceTypeTable, MetadefResourceTypeTable } from '../storage/tables/image.js'

const times = (row: { created_at: number; updated_at: number }) => ({ created_at: glanceTime(Number(row.created_at)), updated_at: glanceTime(Number(row.updated_at)) })
const set = <T>(key: string, value: T | null | undefined) => (value === null || value === undefined ? {} : { [key]: value })
export const namespacePath = (ns: string) => `/v2/metadefs/namespaces/${ns}`

export function namespaceView(row: NamespaceRow, held: { associations?: Record<string, unknown>[]; properties?: Record<string, unknown>; objects?: unknown[]; tags?: unknown[] } = {}) {
  return {
    namespace: row.namespace,
    ...set('display_name', row.display_name),
    ...set('description', row.description),
    visibility: row.visibility,
    protected: row.protected === 1,
    ...set('owner', row.owner),
    ...times(row),
    ...(held.associations && held.associations.length > 0 ? { resource_type_associations: held.associations } : {}),
    ...(held.properties && Object.keys(held.properties).length > 0 ? { properties: held.properties } : {}),
    ...(held.objects && held.objects.length > 0 ? { objects: held.objects } : {}),
    ...(held.tags && held.tags.length > 0 ? { tags: held.tags } : {}),
    schema: '/v2/schemas/metadefs/namespace',
    self: namespacePath(row.namespace),
  }
}

type Member = { name: string; definition: Record<string, unknown>; created_at: number; updated_at: number }

export const objectView = (ns: string, o: Member) => ({ ...o.definition, name: o.name, ...times(o), schema: '/v2/schemas/metadefs/object', self: `${namespacePath(ns)}/objects/${o.name}` })
export const propertyView = (p: Member) => ({ ...p.definition, name: p.name })
export const tagView = (t: Member) => ({ name: t.name, ...times(t) })
export const resourceTypeView = (r: MetadefResourceTypeTable) => ({ name: r.name, ...times(r) })
export const associationView = (a: MetadefNamespaceResourceTypeTable) => ({ name: a.resource_type, ...set('prefix', a.prefix), ...set('properties_target', a.properties_target), ...times(a) })
