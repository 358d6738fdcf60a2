/**
 * Who may use the IdP's client secrets. Reading them: any authenticated user who holds a role on some project
 * (checked against the store by the handler, since an unscoped token carries no roles); that is how a
 * Platform9 user fetches the `kubernetes` secret before logging in to a cluster. Rotating: admins only.
 */
import { anyone, isAdmin, type PolicyTable } from './rules.js'

export const IDP_POLICY: PolicyTable<'idp_clients:list' | 'idp_clients:rotate'> = {
  'idp_clients:list': anyone,
  'idp_clients:rotate': isAdmin,
}
