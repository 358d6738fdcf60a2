/**
 * The image service's policy, after Glance's defaults (Xena and later): readers see, members of the owning project
 * change, deactivate and reactivate, only admins publicize. Visibility itself (who can see which image) is the
 * service's query (an image the caller cannot see is 404); whether the caller sees past it is images:all_projects.
 */
import { anyOf, hasRole, isAdmin, projectMemberOrAdmin, type PolicyTable } from './rules.js'

export type ImageOperation =
  | 'get_images'
  | 'get_image'
  | 'add_image'
  | 'modify_image'
  | 'publicize_image'
  | 'delete_image'
  | 'upload_image'
  | 'download_image'
  | 'download_deactivated'
  | 'deactivate'
  | 'reactivate'
  | 'add_member'
  | 'delete_member'
  | 'modify_member'
  | 'images:all_projects'
  | 'set_owner'
  | 'get_metadef'
  | 'modify_metadef'
  | 'metadefs:all_projects'

const reader = anyOf(isAdmin, hasRole('reader'))
const member = anyOf(isAdmin, hasRole('member'))

export const imagePolicy: PolicyTable<ImageOperation> = {
  get_images: reader,
  get_image: reader,
  add_image: member,
  // Target: the image's owner project.
  modify_image: projectMemberOrAdmin,
  publicize_image: isAdmin,
  delete_image: projectMemberOrAdmin,
  upload_image: projectMemberOrAdmin,
  download_image: reader,
  download_deactivated: isAdmin,
  // Target: the image's owner project.
  deactivate: projectMemberOrAdmin,
  reactivate: projectMemberOrAdmin,
  add_member: projectMemberOrAdmin,
  delete_member: projectMemberOrAdmin,
  // Target: the member project (only the consumer accepts or rejects).
  modify_member: projectMemberOrAdmin,
  /**
   * Every image is visible, whatever its visibility and owner, and every member of a shared one (Glance shows an
   * admin everything). Evaluated once per request into the viewer's `visibility` (image/service.ts viewerOf).
   */
  'images:all_projects': isAdmin,
  /** Naming an image's owner: on create (also without a project-scoped token) and by a patch of `owner`. */
  set_owner: isAdmin,
  /**
   * Metadata definitions (Glance's metadef rules, one per family here: every get_metadef_* is the reader's, every
   * add/modify/delete the admin's). Which private namespaces the caller sees is metadefs:all_projects.
   */
  get_metadef: reader,
  modify_metadef: isAdmin,
  'metadefs:all_projects': isAdmin,
}
