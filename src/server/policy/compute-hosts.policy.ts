/** Policy of the host views of the compute API (os-hypervisors, os-services): Nova's defaults, admin only. */
import { isAdmin, type PolicyTable } from './rules.js'

export type ComputeHostsOperation =
  | 'os_compute_api:os-hypervisors:list'
  | 'os_compute_api:os-hypervisors:list-detail'
  | 'os_compute_api:os-hypervisors:show'
  | 'os_compute_api:os-hypervisors:statistics'
  | 'os_compute_api:os-hypervisors:servers'
  | 'os_compute_api:os-hypervisors:search'
  | 'os_compute_api:os-hypervisors:uptime'
  | 'os_compute_api:os-services:list'
  | 'os_compute_api:os-services:update'
  | 'os_compute_api:os-services:delete'

export const COMPUTE_HOSTS_POLICY: PolicyTable<ComputeHostsOperation> = {
  'os_compute_api:os-hypervisors:list': isAdmin,
  'os_compute_api:os-hypervisors:list-detail': isAdmin,
  'os_compute_api:os-hypervisors:show': isAdmin,
  'os_compute_api:os-hypervisors:statistics': isAdmin,
  'os_compute_api:os-hypervisors:servers': isAdmin,
  'os_compute_api:os-hypervisors:search': isAdmin,
  'os_compute_api:os-hypervisors:uptime': isAdmin,
  'os_compute_api:os-services:list': isAdmin,
  'os_compute_api:os-services:update': isAdmin,
  'os_compute_api:os-services:delete': isAdmin,
}
