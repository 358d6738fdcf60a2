/**
 * The block storage service's policy, after Cinder's defaults: project readers see, members change, admins
 * manage types, quotas and status resets and may act on every project. Another project's volume is 404
 * (the service checks visibility before policy).
 */
import { anyOf, hasRole, isAdmin, projectMemberOrAdmin, projectReaderOrAdmin, type PolicyTable } from './rules.js'

export type VolumeOperation =
  | 'volume:get'
  | 'volume:get_all'
  | 'volume:create'
  | 'volume:update'
  | 'volume:delete'
  | 'volume:extend'
  | 'volume:upload_image'
  | 'volume:reset_status'
  | 'volume:attach'
  | 'volume:detach'
  | 'volume:force_detach'
  | 'volume:attachment_create'
  | 'volume:attachment_update'
  | 'volume:attachment_complete'
  | 'volume:attachment_delete'
  | 'volume:all_tenants'
  | 'volume:other_projects:see'
  | 'url:other_project'
  | 'transfer:create'
  | 'transfer:get'
  | 'transfer:get_all'
  | 'transfer:delete'
  | 'transfer:accept'
  | 'snapshot:get'
  | 'snapshot:create'
  | 'snapshot:update'
  | 'snapshot:delete'
  | 'snapshot:update_status'
  | 'type:get'
  | 'type:manage'
  | 'type:private:see'
  | 'type:access:manage'
  | 'type:encryption:manage'
  | 'default_type:set'
  | 'default_type:get'
  | 'default_type:get_all'
  | 'default_type:unset'
  | 'qos:get'
  | 'qos:manage'
  | 'quota:show'
  | 'quota:update'
  | 'quota_class:show'
  | 'service:get'
  | 'service:update'
  | 'host:get'
  | 'pool:get'
  | 'message:get'
  | 'message:delete'
  | 'capabilities:get'
  | 'quota_class:update'
  | 'group_type:get'
  | 'group_type:manage'
  | 'group_type:private:see'
  | 'group:get'
  | 'group:get_all'
  | 'group:create'
  | 'group:update'
  | 'group:delete'
  | 'group:reset_status'
  | 'group_snapshot:get'
  | 'group_snapshot:get_all'
  | 'group_snapshot:create'
  | 'group_snapshot:delete'
  | 'group_snapshot:reset_status'
  | 'backup:get'
  | 'backup:get_all'
  | 'backup:create'
  | 'backup:update'
  | 'backup:delete'
  | 'backup:restore'
  | 'backup:reset_status'
  | 'backup:force_delete'
  | 'backup:export'
  | 'backup:import'

export const volumePolicy: PolicyTable<VolumeOperation> = {
  // Targets: the volume's (or snapshot's, or quota's) project.
  'volume:get': projectReaderOrAdmin,
  'volume:get_all': anyOf(isAdmin, hasRole('reader')),
  'volume:create': projectMemberOrAdmin,
  'volume:update': projectMemberOrAdmin,
  'volume:delete': projectMemberOrAdmin,
  'volume:extend': projectMemberOrAdmin,
  'volume:upload_image': projectMemberOrAdmin,
  'volume:reset_status': isAdmin,
  /** Cinder's os-attach / os-detach: recording that the volume is attached to an instance (no disk is plugged in). */
  'volume:attach': projectMemberOrAdmin,
  'volume:detach': projectMemberOrAdmin,
  /** The attachments API (3.27+): a project's members attach its volumes for a consumer and connect them. */
  'volume:attachment_create': projectMemberOrAdmin,
  'volume:attachment_update': projectMemberOrAdmin,
  'volume:attachment_complete': projectMemberOrAdmin,
  'volume:attachment_delete': projectMemberOrAdmin,
  /** os-force_detach: removing an attachment whatever the volume's status (an admin clearing a stuck record). */
  'volume:force_detach': isAdmin,
  'volume:all_tenants': isAdmin,
  /** Another project's volumes and snapshots exist for the caller at all (else 404); the service's Caller.visibility. */
  'volume:other_projects:see': isAdmin,
  /** A URL naming another project than the token's (/v3/{project_id}/…); else 400 Malformed request url. */
  'url:other_project': isAdmin,
  /** Transfers: targets are the volume's project; accept's target is the accepting (caller's) project. */
  'transfer:create': projectMemberOrAdmin,
  'transfer:get': projectReaderOrAdmin,
  'transfer:get_all': anyOf(isAdmin, hasRole('reader')),
  'transfer:delete': projectMemberOrAdmin,
  'transfer:accept': projectMemberOrAdmin,
  'snapshot:get': projectReaderOrAdmin,
  'snapshot:create': projectMemberOrAdmin,
  'snapshot:update': projectMemberOrAdmin,
  'snapshot:delete': projectMemberOrAdmin,
  /** os-update_snapshot_status: the snapshot's creator reports on it (Nova-assisted snapshots). */
  'snapshot:update_status': projectMemberOrAdmin,
  'type:get': anyOf(isAdmin, hasRole('reader')),
  'type:manage': isAdmin,
  /** Private volume types are listed and found (else they do not exist for the caller). */
  'type:private:see': isAdmin,
  /** Which projects may use a private type: listing, granting and taking back (os-volume-type-access). */
  'type:access:manage': isAdmin,
  /** A type's encryption spec (/types/{id}/encryption): reading and changing it (Cinder's volume_type_encryption). */
  'type:encryption:manage': isAdmin,
  /** Projects' default volume types (/default-types, 3.62): Cinder's four rules, each admin-only by default. */
  'default_type:set': isAdmin,
  'default_type:get': isAdmin,
  'default_type:get_all': isAdmin,
  'default_type:unset': isAdmin,
  /** QoS specs (qos-specs): listing and showing them and their associations with volume types. */
  'qos:get': isAdmin,
  /** Creating, changing, deleting QoS specs and associating them with volume types. */
  'qos:manage': isAdmin,
  'quota:show': projectReaderOrAdmin,
  'quota:update': isAdmin,
  /** Quota classes: the class default is every project's defaults. */
  'quota_class:show': isAdmin,
  'quota_class:update': isAdmin,
  /** The scheduler and volume services (os-services), and enabling, disabling, freezing and thawing them. */
  'service:get': isAdmin,
  'service:update': isAdmin,
  /** os-hosts: the services' hosts and what each backend holds for every project. */
  'host:get': isAdmin,
  /** The scheduler's pools with their capacity, and the backends' capabilities. */
  'pool:get': isAdmin,
  /** User messages: the project's own (admins see every project's through volume:other_projects:see). */
  'message:get': projectReaderOrAdmin,
  'message:delete': projectMemberOrAdmin,
  'capabilities:get': isAdmin,
  // Generic volume groups (volume/groups.ts): group types are an operator's, groups and group snapshots the
  // project's; targets are the group's (or group snapshot's) project.
  'group_type:get': anyOf(isAdmin, hasRole('reader')),
  /** Creating, changing and deleting group types and their group specs (which only admins read). */
  'group_type:manage': isAdmin,
  /** Private group types are listed and found (else they do not exist for the caller). */
  'group_type:private:see': isAdmin,
  'group:get': projectReaderOrAdmin,
  'group:get_all': anyOf(isAdmin, hasRole('reader')),
  'group:create': projectMemberOrAdmin,
  'group:update': projectMemberOrAdmin,
  'group:delete': projectMemberOrAdmin,
  'group:reset_status': isAdmin,
  'group_snapshot:get': projectReaderOrAdmin,
  'group_snapshot:get_all': anyOf(isAdmin, hasRole('reader')),
  'group_snapshot:create': projectMemberOrAdmin,
  'group_snapshot:delete': projectMemberOrAdmin,
  'group_snapshot:reset_status': isAdmin,
  // Volume backups (volume/backups.ts): targets are the backup's (for create, the volume's) project.
  'backup:get': projectReaderOrAdmin,
  'backup:get_all': anyOf(isAdmin, hasRole('reader')),
  'backup:create': projectMemberOrAdmin,
  'backup:update': projectMemberOrAdmin,
  'backup:delete': projectMemberOrAdmin,
  'backup:restore': projectMemberOrAdmin,
  'backup:reset_status': isAdmin,
  'backup:force_delete': isAdmin,
  /** export_record / import_record: a backup's record carries where its data is (Cinder: admins only). */
  'backup:export': isAdmin,
  'backup:import': isAdmin,
}
