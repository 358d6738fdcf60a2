/** Server groups per microversion (compute-api.md §8.8). */
import type { FieldTable } from './fields.js'

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
  id: { views: V, read: (g) => g.id },
  name: { views: V, read: (g) => g.name },
  policies: { views: V, until: '2.64', read: (g) => [g.policy] },
  policy: { views: V, since: '2.64', read: (g) => g.policy },
  rules: { views: V, since: '2.64', read: (g) => g.rules },
  members: { views: V, read: (g) => g.members },
  metadata: { views: V, until: '2.64', read: () => ({}) },
  project_id: { views: V, since: '2.13', read: (g) => g.projectId },
  user_id: { views: V, since: '2.13', read: (g) => g.userId },
}
