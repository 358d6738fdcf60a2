/**
 * Cinder's API extensions this service implements, as `GET /v3/extensions` lists them (clients and Tempest read
 * the aliases to decide what to call). Only extensions whose behaviour is served are listed.
 */
const UPDATED = '2012-01-01T00:00:00+00:00'

const EXTENSIONS: { alias: string; name: string; description: string }[] = [
  { alias: 'os-admin-actions', name: 'AdminActions', description: 'Enable admin actions.' },
  { alias: 'capabilities', name: 'Capabilities', description: 'Capabilities support.' },
  { alias: 'os-availability-zone', name: 'AvailabilityZones', description: 'Describe Availability Zones.' },
  { alias: 'os-extended-snapshot-attributes', name: 'ExtendedSnapshotAttributes', description: 'Extended SnapshotAttributes support.' },
  { alias: 'os-hosts', name: 'Hosts', description: 'Admin-only host administration.' },
  { alias: 'os-quota-class-sets', name: 'QuotaClasses', description: 'Quota classes management support.' },
  { alias: 'os-quota-sets', name: 'Quotas', description: 'Quota management support.' },
  { alias: 'os-services', name: 'Services', description: 'Services support.' },
  { alias: 'os-types-extra-specs', name: 'TypesExtraSpecs', description: 'Type extra specs support.' },
  { alias: 'os-types-manage', name: 'TypesManage', description: 'Types manage support.' },
  { alias: 'os-used-limits', name: 'UsedLimits', description: 'Provide data on limited resources that are being used.' },
  { alias: 'os-volume-actions', name: 'VolumeActions', description: 'Enable volume actions.' },
  { alias: 'os-vol-host-attr', name: 'VolumeHostAttribute', description: 'Expose host as an attribute of a volume.' },
  { alias: 'os-vol-image-meta', name: 'VolumeImageMetadata', description: 'Show image metadata associated with the volume.' },
  { alias: 'os-vol-mig-status-attr', name: 'VolumeMigStatusAttribute', description: 'Expose migration_status as an attribute of a volume.' },
  { alias: 'os-volume-transfer', name: 'VolumeTransfer', description: 'Volume transfer management support.' },
  { alias: 'os-volume-type-access', name: 'VolumeTypeAccess', description: 'Volume type access support.' },
  { alias: 'os-vol-tenant-attr', name: 'VolumeTenantAttribute', description: 'Expose the internal project_id as an attribute of a volume.' },
  { alias: 'scheduler-stats', name: 'Scheduler_stats', description: 'Scheduler stats support.' },
]

export function extensionsDocument() {
  return { extensions: EXTENSIONS.map((e) => ({ ...e, updated: UPDATED, links: [] })) }
}
