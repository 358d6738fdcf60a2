/** The key pair representation per microversion (compute-api.md §8.2). */
import type { FieldTable } from './fields.js'
import { isoMicros } from './time.js'

export type KeypairView = 'list' | 'show' | 'create'

export interface KeypairModel {
  id: string
  name: string
  userId: string
  type: string
  publicKey: string
  fingerprint: string
  createdAt: number
  privateKey?: string
}

export const keypairFields: FieldTable<KeypairModel, KeypairView> = {
  name: { views: ['list', 'show', 'create'], read: (k) => k.name },
  public_key: { views: ['list', 'show', 'create'], read: (k) => k.publicKey },
  fingerprint: { views: ['list', 'show', 'create'], read: (k) => k.fingerprint },
  user_id: { views: ['show', 'create'], read: (k) => k.userId },
  private_key: { views: ['create'], read: (k) => k.privateKey, omit: (k) => k.privateKey === undefined },
  created_at: { views: ['show'], read: (k) => isoMicros(k.createdAt) },
  deleted: { views: ['show'], read: () => false },
  deleted_at: { views: ['show'], read: () => null },
  updated_at: { views: ['show'], read: () => null },
  id: { views: ['show'], read: (k) => Number.parseInt(k.id.replace(/-/g, '').slice(0, 8), 16) },
  type: { views: ['list', 'show', 'create'], since: '2.2', read: (k) => k.type },
}
