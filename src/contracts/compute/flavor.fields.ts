/** The flavor representation per microversion (compute-api.md §8.1). Views: `summary` (GET /flavors) and `detail`. */
import type { FieldTable } from './fields.js'
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
  id: { views: BOTH, read: (f) => f.id },
  name: { views: BOTH, read: (f) => f.name },
  ram: { views: DETAIL, read: (f) => f.ram },
  disk: { views: DETAIL, read: (f) => f.disk },
  swap: [
    { views: DETAIL, until: '2.75', read: (f) => (f.swap === 0 ? '' : f.swap) },
    { views: DETAIL, since: '2.75', read: (f) => f.swap },
  ],
  'OS-FLV-EXT-DATA:ephemeral': { views: DETAIL, read: (f) => f.ephemeral },
  'OS-FLV-DISABLED:disabled': { views: DETAIL, read: (f) => f.disabled },
  vcpus: { views: DETAIL, read: (f) => f.vcpus },
  'os-flavor-access:is_public': { views: DETAIL, read: (f) => f.isPublic },
  rxtx_factor: { views: DETAIL, read: (f) => (f.rxtxFactor ? f.rxtxFactor : '') },
  links: { views: BOTH, read: (f) => f.links },
  description: { views: BOTH, since: '2.55', read: (f) => f.description },
  extra_specs: { views: DETAIL, since: '2.61', read: (f) => f.extraSpecs },
}
