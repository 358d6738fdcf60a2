/**
 * Who may use the IdP's clients. Reading the secrets map: any authenticated user who holds a role on some
 * project (checked against the store by the handler, since an unscoped token carries no roles); that is how a
 * Platform9 user fetches the `kubernetes` secret before logging in to a cluster. Such a user sees the built-in
 * clients only; the secrets of clients an admin registered (a Grafana, an Argo CD) are for admins. Registering,
 * changing, deleting and rotating: admins only.
 */
import { anyone, isAdmin, type PolicyTable } from './rules.js'

export const IDP_POLICY: PolicyTable<
  'idp_clients:list' | 'idp_clients:list_all' | 'idp_clients:show' | 'idp_clients:create' | 'idp_clients:update' | 'idp_clients:delete' | 'idp_clients:rotate'
> = {
  'idp_clients:list': anyone,
  'idp_clients:list_all': isAdmin,
  'idp_clients:show': isAdmin,
  'idp_clients:create': isAdmin,
  'idp_clients:update': isAdmin,
  'idp_clients:delete': isAdmin,
  'idp_clients:rotate': isAdmin,
}
