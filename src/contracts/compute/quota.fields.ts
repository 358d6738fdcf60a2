/** Quota sets and absolute limits per microversion (docs/compute.md, "Representations"). */
import { Type as T } from '@sinclair/typebox'
import type { FieldTable } from './fields.js'
import { J } from './json-types.js'

/** Resource → limit (or {in_use, limit, reserved} for detail). */
export type QuotaSource = Record<string, unknown>

const v = (key: string) => (q: QuotaSource) => q[key]
const ALL = ['set'] as const

/** A limit (-1: unlimited), or in the detail view the limit with what is in use and reserved. */
const QUOTA = T.Union([J.int, T.Object({ in_use: J.int, limit: J.int, reserved: J.int })])

export const quotaSetFields: FieldTable<QuotaSource, 'set'> = {
  id: { type: J.str, views: ALL, read: v('id'), omit: (q) => q.id === undefined },
  cores: { type: QUOTA, views: ALL, read: v('cores') },
  instances: { type: QUOTA, views: ALL, read: v('instances') },
  ram: { type: QUOTA, views: ALL, read: v('ram') },
  key_pairs: { type: QUOTA, views: ALL, read: v('key_pairs') },
  metadata_items: { type: QUOTA, views: ALL, read: v('metadata_items') },
  server_groups: { type: QUOTA, views: ALL, read: v('server_groups') },
  server_group_members: { type: QUOTA, views: ALL, read: v('server_group_members') },
  injected_files: { type: QUOTA, views: ALL, until: '2.57', read: v('injected_files') },
  injected_file_content_bytes: { type: QUOTA, views: ALL, until: '2.57', read: v('injected_file_content_bytes') },
  injected_file_path_bytes: { type: QUOTA, views: ALL, until: '2.57', read: v('injected_file_path_bytes') },
  fixed_ips: { type: QUOTA, views: ALL, until: '2.36', read: (q) => q.fixed_ips ?? -1 },
  floating_ips: { type: QUOTA, views: ALL, until: '2.36', read: (q) => q.floating_ips ?? -1 },
  security_groups: { type: QUOTA, views: ALL, until: '2.36', read: (q) => q.security_groups ?? -1 },
  security_group_rules: { type: QUOTA, views: ALL, until: '2.36', read: (q) => q.security_group_rules ?? -1 },
}

export const absoluteLimitFields: FieldTable<QuotaSource, 'set'> = {
  maxServerMeta: { type: J.int, views: ALL, read: v('metadata_items') },
  maxImageMeta: { type: J.int, views: ALL, until: '2.39', read: v('metadata_items') },
  maxPersonality: { type: J.int, views: ALL, until: '2.57', read: v('injected_files') },
  maxPersonalitySize: { type: J.int, views: ALL, until: '2.57', read: v('injected_file_content_bytes') },
  maxTotalCores: { type: J.int, views: ALL, read: v('cores') },
  maxTotalInstances: { type: J.int, views: ALL, read: v('instances') },
  maxTotalRAMSize: { type: J.int, views: ALL, read: v('ram') },
  maxTotalKeypairs: { type: J.int, views: ALL, read: v('key_pairs') },
  maxSecurityGroups: { type: J.int, views: ALL, until: '2.36', read: () => -1 },
  maxSecurityGroupRules: { type: J.int, views: ALL, until: '2.36', read: () => -1 },
  maxTotalFloatingIps: { type: J.int, views: ALL, until: '2.36', read: () => -1 },
  maxServerGroups: { type: J.int, views: ALL, read: v('server_groups') },
  maxServerGroupMembers: { type: J.int, views: ALL, read: v('server_group_members') },
  totalCoresUsed: { type: J.int, views: ALL, read: v('used_cores') },
  totalInstancesUsed: { type: J.int, views: ALL, read: v('used_instances') },
  totalRAMUsed: { type: J.int, views: ALL, read: v('used_ram') },
  totalFloatingIpsUsed: { type: J.int, views: ALL, until: '2.36', read: () => 0 },
  totalSecurityGroupsUsed: { type: J.int, views: ALL, until: '2.36', read: () => 0 },
  totalServerGroupsUsed: { type: J.int, views: ALL, read: v('used_server_groups') },
}
