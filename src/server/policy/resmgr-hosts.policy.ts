/**
 * Who may do what with onboarded hosts. Reading hosts: admins, and readers of the `admin` project (an operator's
 * monitoring account). Registration tokens, roles and host removal: admins only. Agents act with their host
 * credential on their own host, which is checked by the host-credential hook, not by this table.
 */
import { allOf, anyOf, hasRole, isAdmin, type PolicyTable, type Rule } from './rules.js'

const inAdminProject: Rule = (p) => p.scope.type === 'project' && p.scope.projectName === 'admin'

export type ResmgrHostsOperation = 'hosts:list' | 'hosts:get' | 'hosts:metrics' | 'hosts:delete' | 'roles:assign' | 'roles:remove' | 'registration_tokens:create'

export const RESMGR_HOSTS_POLICY: PolicyTable<ResmgrHostsOperation> = {
  'hosts:list': anyOf(isAdmin, allOf(hasRole('reader'), inAdminProject)),
  'hosts:get': anyOf(isAdmin, allOf(hasRole('reader'), inAdminProject)),
  /** A host's metrics history (docs/metrics.md): who may read hosts. */
  'hosts:metrics': anyOf(isAdmin, allOf(hasRole('reader'), inAdminProject)),
  'hosts:delete': isAdmin,
  'roles:assign': isAdmin,
  'roles:remove': isAdmin,
  'registration_tokens:create': isAdmin,
}
