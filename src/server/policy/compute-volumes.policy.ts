/**
 * Policy of a server's volume attachments (os-volume_attachments): Nova's defaults. Project readers list and show,
 * members attach, detach and (2.85) update; swapping the volume under a running guest is for admins.
 */
import { isAdmin, projectMemberOrAdmin, projectReaderOrAdmin, type PolicyTable } from './rules.js'

export type ComputeVolumesOperation =
  | 'os_compute_api:os-volumes-attachments:index'
  | 'os_compute_api:os-volumes-attachments:show'
  | 'os_compute_api:os-volumes-attachments:create'
  | 'os_compute_api:os-volumes-attachments:update'
  | 'os_compute_api:os-volumes-attachments:swap'
  | 'os_compute_api:os-volumes-attachments:delete'

export const COMPUTE_VOLUMES_POLICY: PolicyTable<ComputeVolumesOperation> = {
  'os_compute_api:os-volumes-attachments:index': projectReaderOrAdmin,
  'os_compute_api:os-volumes-attachments:show': projectReaderOrAdmin,
  'os_compute_api:os-volumes-attachments:create': projectMemberOrAdmin,
  'os_compute_api:os-volumes-attachments:update': projectMemberOrAdmin,
  'os_compute_api:os-volumes-attachments:swap': isAdmin,
  'os_compute_api:os-volumes-attachments:delete': projectMemberOrAdmin,
}
