/** Policy of the host views of the compute API (os-hypervisors, os-services, os-hosts): Nova's defaults, admin only. */
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
  | 'os_compute_api:os-hosts:list'
  | 'os_compute_api:os-hosts:show'
  | 'os_compute_api:os-hosts:update'
  | 'os_compute_api:os-hosts:reboot'
  | 'os_compute_api:os-hosts:shutdown'
  | 'os_compute_api:os-hosts:start'

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
  'os_compute_api:os-hosts:list': isAdmin,
  'os_compute_api:os-hosts:show': isAdmin,
  'os_compute_api:os-hosts:update': isAdmin,
  'os_compute_api:os-hosts:reboot': isAdmin,
  'os_compute_api:os-hosts:shutdown': isAdmin,
  'os_compute_api:os-hosts:start': isAdmin,
}
