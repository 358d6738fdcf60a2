/** The key pair representation per microversion (docs/compute.md, "Representations"). */
import { Type as T } from '@sinclair/typebox'
import type { FieldTable } from './fields.js'
import { J } from './json-types.js'
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
  name: { type: J.str, views: ['list', 'show', 'create'], read: (k) => k.name },
  public_key: { type: J.str, views: ['list', 'show', 'create'], read: (k) => k.publicKey },
  fingerprint: { type: J.str, views: ['list', 'show', 'create'], read: (k) => k.fingerprint },
  user_id: { type: J.str, views: ['show', 'create'], read: (k) => k.userId },
  private_key: { type: J.str, views: ['create'], read: (k) => k.privateKey, omit: (k) => k.privateKey === undefined },
  created_at: { type: J.str, views: ['show'], read: (k) => isoMicros(k.createdAt) },
  deleted: { type: J.bool, views: ['show'], read: () => false },
  deleted_at: { type: T.Null(), views: ['show'], read: () => null },
  updated_at: { type: T.Null(), views: ['show'], read: () => null },
  id: { type: J.int, views: ['show'], read: (k) => Number.parseInt(k.id.replace(/-/g, '').slice(0, 8), 16) },
  type: { type: J.str, views: ['list', 'show', 'create'], since: '2.2', read: (k) => k.type },
}
