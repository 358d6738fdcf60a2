/**
 * Domain-specific configuration (Keystone's /v3/domains/{id}/config): per domain, options of the `identity` and
 * `ldap` groups that override the defaults. pcc stores and serves them; it has no LDAP driver, so they change no
 * behaviour (docs/identity.md, "Domain configuration"). Which options exist, their defaults and which are secret
 * are Keystone's (its domain-config whitelist and keystone.conf defaults).
 */
import { AppError, badRequest, notFound } from '../../contracts/errors.js'

export type OptionValue = unknown
/** group → option → value */
export type DomainConfig = Record<string, Record<string, OptionValue>>

/** The options a domain may set, with Keystone's default values. */
export const DEFAULT_CONFIG: DomainConfig = {
  identity: { driver: 'sql', list_limit: null },
  ldap: {
    url: 'ldap://localhost',
    user: null,
    suffix: 'cn=example,cn=com',
    query_scope: 'one',
    page_size: 0,
    alias_dereferencing: 'default',
    debug_level: null,
    chase_referrals: null,
    user_tree_dn: null,
    user_filter: null,
    user_objectclass: 'inetOrgPerson',
    user_id_attribute: 'cn',
    user_name_attribute: 'sn',
    user_mail_attribute: 'mail',
    user_description_attribute: 'description',
    user_pass_attribute: 'userPassword',
    user_enabled_attribute: 'enabled',
    user_enabled_invert: false,
    user_enabled_mask: 0,
    user_enabled_default: 'True',
    user_attribute_ignore: ['default_project_id'],
    user_default_project_id_attribute: null,
    user_enabled_emulation: false,
    user_enabled_emulation_dn: null,
    user_enabled_emulation_use_group_config: false,
    user_additional_attribute_mapping: [],
    group_tree_dn: null,
    group_filter: null,
    group_objectclass: 'groupOfNames',
    group_id_attribute: 'cn',
    group_name_attribute: 'ou',
    group_members_are_ids: false,
    group_member_attribute: 'member',
    group_desc_attribute: 'description',
    group_attribute_ignore: [],
    group_additional_attribute_mapping: [],
    tls_cacertfile: null,
    tls_cacertdir: null,
    use_tls: false,
    tls_req_cert: 'demand',
    use_pool: true,
    pool_size: 10,
    pool_retry_max: 3,
    pool_retry_delay: 0.1,
    pool_connection_timeout: -1,
    pool_connection_lifetime: 600,
    use_auth_pool: true,
    auth_pool_size: 100,
    auth_pool_connection_lifetime: 60,
  },
}

/** Options a domain may set but that are never answered (kept sealed at rest). */
export const SENSITIVE_OPTIONS: Record<string, readonly string[]> = { identity: [], ldap: ['password'] }

/** Keystone refuses an unknown group or option with 403 (its InvalidDomainConfig). */
const invalid = (message: string) => new AppError('forbidden', `Invalid domain specific configuration: ${message}`)

export function isSensitive(group: string, option: string): boolean {
  return SENSITIVE_OPTIONS[group]?.includes(option) ?? false
}

/** Checks that a group (and option) is one a domain may set. */
export function checkGroupAndOption(group: string, option?: string): void {
  if (!(group in DEFAULT_CONFIG)) throw invalid(`group ${group} is not supported (only ${Object.keys(DEFAULT_CONFIG).join(', ')}).`)
  if (option !== undefined && !(option in DEFAULT_CONFIG[group]) && !isSensitive(group, option)) {
    throw invalid(`option ${option} in group ${group} is not supported.`)
  }
}

/** Checks a whole configuration: at least one group, every group an object of known options. */
export function checkConfig(config: DomainConfig): void {
  if (Object.keys(config).length === 0) throw invalid('the configuration is empty.')
  for (const [group, options] of Object.entries(config)) {
    checkGroupAndOption(group)
    if (!options || typeof options !== 'object' || Array.isArray(options)) throw badRequest(`The group ${group} must be an object of options.`)
    if (Object.keys(options).length === 0) throw invalid(`group ${group} has no options.`)
    for (const option of Object.keys(options)) checkGroupAndOption(group, option)
  }
}

/** The options of `update` set over `base` (a new object). */
export function mergeConfig(base: DomainConfig, update: DomainConfig): DomainConfig {
  const out: DomainConfig = {}
  for (const [group, options] of Object.entries(base)) out[group] = { ...options }
  for (const [group, options] of Object.entries(update)) out[group] = { ...out[group], ...options }
  return out
}

/** The configuration without a group, or without one option of it; 404 when it has no such thing. */
export function withoutPart(config: DomainConfig, group: string, option?: string): DomainConfig {
  const options = config[group]
  if (!options || (option !== undefined && !(option in options))) throw notFound(`Could not find the domain configuration ${option ? `option ${option} of ` : ''}group ${group}.`)
  const out = mergeConfig(config, {})
  if (option === undefined) delete out[group]
  else {
    delete out[group][option]
    if (Object.keys(out[group]).length === 0) delete out[group]
  }
  return out
}

/** Splits a configuration into the options answered and the sensitive ones (stored sealed). */
export function splitSensitive(config: DomainConfig): { open: DomainConfig; sensitive: DomainConfig } {
  const open: DomainConfig = {}
  const sensitive: DomainConfig = {}
  for (const [group, options] of Object.entries(config)) {
    for (const [option, value] of Object.entries(options)) {
      const side = isSensitive(group, option) ? sensitive : open
      side[group] = { ...side[group], [option]: value }
    }
  }
  return { open, sensitive }
}
