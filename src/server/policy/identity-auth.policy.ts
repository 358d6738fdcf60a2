/**
 * Policy of identity authentication operations (Keystone's defaults): a user may validate, check and revoke its
 * own tokens and manage its own credentials and application credentials; admins and system readers may do more.
 * The target's userId is the subject token's user or the owner of the credential.
 */
import { allOf, anyOf, anyone, hasRole, isAdmin, isSelf, type PolicyTable, type Rule } from './rules.js'

const systemReader: Rule = allOf(hasRole('reader'), (p) => p.scope.type === 'system')
const adminOrOwner = anyOf(isAdmin, isSelf)
const adminReaderOrOwner = anyOf(isAdmin, systemReader, isSelf)

export type IdentityAuthOperation =
  | 'identity:validate_token'
  | 'identity:check_token'
  | 'identity:revoke_token'
  | 'identity:get_auth_catalog'
  | 'identity:get_auth_projects'
  | 'identity:get_auth_domains'
  | 'identity:get_auth_system'
  | 'identity:create_credential'
  | 'identity:list_credentials'
  | 'identity:get_credential'
  | 'identity:update_credential'
  | 'identity:delete_credential'
  | 'identity:create_application_credential'
  | 'identity:list_application_credentials'
  | 'identity:get_application_credential'
  | 'identity:delete_application_credential'
  | 'identity:list_access_rules'
  | 'identity:get_access_rule'
  | 'identity:delete_access_rule'
  | 'identity:authorize_request_token'
  | 'identity:list_access_tokens'
  | 'identity:get_access_token'
  | 'identity:delete_access_token'
  | 'identity:list_access_token_roles'
  | 'identity:get_access_token_role'

export const identityAuthPolicy: PolicyTable<IdentityAuthOperation> = {
  'identity:validate_token': anyOf(isAdmin, systemReader, hasRole('service'), isSelf),
  'identity:check_token': anyOf(isAdmin, systemReader, hasRole('service'), isSelf),
  'identity:revoke_token': adminOrOwner,
  'identity:get_auth_catalog': anyone,
  'identity:get_auth_projects': anyone,
  'identity:get_auth_domains': anyone,
  'identity:get_auth_system': anyone,
  'identity:create_credential': adminOrOwner,
  'identity:list_credentials': adminReaderOrOwner,
  'identity:get_credential': adminReaderOrOwner,
  'identity:update_credential': adminOrOwner,
  'identity:delete_credential': adminOrOwner,
  'identity:create_application_credential': isSelf,
  'identity:list_application_credentials': adminReaderOrOwner,
  'identity:get_application_credential': adminReaderOrOwner,
  'identity:delete_application_credential': adminOrOwner,
  'identity:list_access_rules': adminReaderOrOwner,
  'identity:get_access_rule': adminReaderOrOwner,
  'identity:delete_access_rule': adminOrOwner,
  // OS-OAUTH1: any user authorizes a request token with roles it holds (the flow checks them); access tokens are
  // their user's.
  'identity:authorize_request_token': anyone,
  'identity:list_access_tokens': adminReaderOrOwner,
  'identity:get_access_token': adminReaderOrOwner,
  'identity:delete_access_token': adminOrOwner,
  'identity:list_access_token_roles': adminReaderOrOwner,
  'identity:get_access_token_role': adminReaderOrOwner,
}
