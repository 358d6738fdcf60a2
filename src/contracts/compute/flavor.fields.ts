/** The flavor representation per microversion (docs/compute.md, "Representations"). Views: `summary` (GET /flavors) and `detail`. */
import { Type as T } from '@sinclair/typebox'
import type { FieldTable } from './fields.js'
import { J } from './json-types.js'
import type { Link } from './server.fields.js'

export type FlavorView = 'summary' | 'detail'

export interface FlavorModel {
  id: string
  name: string
  ram: number
  disk: number
  swap: number
  ephemeral: number
  disabled: boolean
  vcpus: number
  isPublic: boolean
  rxtxFactor: number
  description: string | null
  extraSpecs: Record<string, string>
  links: Link[]
}

const BOTH = ['summary', 'detail'] as const
const DETAIL = ['detail'] as const

export const flavorFields: FieldTable<FlavorModel, FlavorView> = {
  id: { type: J.str, views: BOTH, read: (f) => f.id },
  name: { type: J.str, views: BOTH, read: (f) => f.name },
  ram: { type: J.int, views: DETAIL, read: (f) => f.ram },
  disk: { type: J.int, views: DETAIL, read: (f) => f.disk },
  swap: [
    { type: T.Union([J.int, T.Literal('')]), views: DETAIL, until: '2.75', read: (f) => (f.swap === 0 ? '' : f.swap) },
    { type: J.int, views: DETAIL, since: '2.75', read: (f) => f.swap },
  ],
  'OS-FLV-EXT-DATA:ephemeral': { type: J.int, views: DETAIL, read: (f) => f.ephemeral },
  'OS-FLV-DISABLED:disabled': { type: J.bool, views: DETAIL, read: (f) => f.disabled },
  vcpus: { type: J.int, views: DETAIL, read: (f) => f.vcpus },
  'os-flavor-access:is_public': { type: J.bool, views: DETAIL, read: (f) => f.isPublic },
  rxtx_factor: { type: T.Union([J.num, T.Literal('')]), views: DETAIL, read: (f) => (f.rxtxFactor ? f.rxtxFactor : '') },
  links: { type: J.links, views: BOTH, read: (f) => f.links },
  description: { type: J.nstr, views: BOTH, since: '2.55', read: (f) => f.description },
  extra_specs: { type: J.strMap, views: DETAIL, since: '2.61', read: (f) => f.extraSpecs },
}
