/** Server groups per microversion (docs/compute.md, "Representations"). */
import { Type as T } from '@sinclair/typebox'
import type { FieldTable } from './fields.js'
import { J } from './json-types.js'

export interface ServerGroupModel {
  id: string
  name: string
  policy: string
  rules: Record<string, unknown>
  members: string[]
  projectId: string
  userId: string
}

const V = ['group'] as const

export const serverGroupFields: FieldTable<ServerGroupModel, 'group'> = {
  id: { type: J.str, views: V, read: (g) => g.id },
  name: { type: J.str, views: V, read: (g) => g.name },
  policies: { type: T.Array(J.str), views: V, until: '2.64', read: (g) => [g.policy] },
  policy: { type: J.str, views: V, since: '2.64', read: (g) => g.policy },
  rules: { type: T.Record(J.str, T.Unknown()), views: V, since: '2.64', read: (g) => g.rules },
  members: { type: T.Array(J.str), views: V, read: (g) => g.members },
  metadata: { type: T.Object({}), views: V, until: '2.64', read: () => ({}) },
  project_id: { type: J.str, views: V, since: '2.13', read: (g) => g.projectId },
  user_id: { type: J.str, views: V, since: '2.13', read: (g) => g.userId },
}
