/** Quota sets and absolute limits per microversion (compute-api.md §8.6, §8.7). */
import type { FieldTable } from './fields.js'

/** Resource → limit (or {in_use, limit, reserved} for detail). */
export type QuotaSource = Record<string, unknown>

const v = (key: string) => (q: QuotaSource) => q[key]
const ALL = ['set'] as const

export const quotaSetFields: FieldTable<QuotaSource, 'set'> = {
  id: { views: ALL, read: v('id'), omit: (q) => q.id === undefined },
  cores: { views: ALL, read: v('cores') },
  instances: { views: ALL, read: v('instances') },
  ram: { views: ALL, read: v('ram') },
  key_pairs: { views: ALL, read: v('key_pairs') },
  metadata_items: { views: ALL, read: v('metadata_items') },
  server_groups: { views: ALL, read: v('server_groups') },
  server_group_members: { views: ALL, read: v('server_group_members') },
  injected_files: { views: ALL, until: '2.57', read: v('injected_files') },
  injected_file_content_bytes: { views: ALL, until: '2.57', read: v('injected_file_content_bytes') },
  injected_file_path_bytes: { views: ALL, until: '2.57', read: v('injected_file_path_bytes') },
  fixed_ips: { views: ALL, until: '2.36', read: (q) => q.fixed_ips ?? -1 },
  floating_ips: { views: ALL, until: '2.36', read: (q) => q.floating_ips ?? -1 },
  security_groups: { views: ALL, until: '2.36', read: (q) => q.security_groups ?? -1 },
  security_group_rules: { views: ALL, until: '2.36', read: (q) => q.security_group_rules ?? -1 },
}

export const absoluteLimitFields: FieldTable<QuotaSource, 'set'> = {
  maxServerMeta: { views: ALL, read: v('metadata_items') },
  maxImageMeta: { views: ALL, until: '2.39', read: v('metadata_items') },
  maxPersonality: { views: ALL, until: '2.57', read: v('injected_files') },
  maxPersonalitySize: { views: ALL, until: '2.57', read: v('injected_file_content_bytes') },
  maxTotalCores: { views: ALL, read: v('cores') },
  maxTotalInstances: { views: ALL, read: v('instances') },
  maxTotalRAMSize: { views: ALL, read: v('ram') },
  maxTotalKeypairs: { views: ALL, read: v('key_pairs') },
  maxSecurityGroups: { views: ALL, until: '2.36', read: () => -1 },
  maxSecurityGroupRules: { views: ALL, until: '2.36', read: () => -1 },
  maxTotalFloatingIps: { views: ALL, until: '2.36', read: () => -1 },
  maxServerGroups: { views: ALL, read: v('server_groups') },
  maxServerGroupMembers: { views: ALL, read: v('server_group_members') },
  totalCoresUsed: { views: ALL, read: v('used_cores') },
  totalInstancesUsed: { views: ALL, read: v('used_instances') },
  totalRAMUsed: { views: ALL, read: v('used_ram') },
  totalFloatingIpsUsed: { views: ALL, until: '2.36', read: () => 0 },
  totalSecurityGroupsUsed: { views: ALL, until: '2.36', read: () => 0 },
  totalServerGroupsUsed: { views: ALL, read: v('used_server_groups') },
}
