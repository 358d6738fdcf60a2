/**
 * JSON Schemas of the identity API's answers (admin/views.ts, the token body, credentials…), for /openapi.json.
 * Records Keystone lets carry extra attributes (domains, projects, users) are open objects.
 */
type Schema = Record<string, unknown>

const str = { type: 'string' }
const nstr = { type: ['string', 'null'] }
const bool = { type: 'boolean' }
const strings = { type: 'array', items: str }
const self = { type: 'object', properties: { self: str }, required: ['self'] }
const object = (properties: Record<string, unknown>, required: string[] = []): Schema => ({ type: 'object', properties, required })

const domain = object({ id: str, name: str, description: nstr, enabled: bool, tags: strings, options: { type: 'object' }, links: self }, ['id', 'name'])
const project = object(
  // A project acting as a domain (is_domain) has no domain: domain_id null.
  { id: str, name: str, domain_id: nstr, description: nstr, enabled: bool, parent_id: nstr, is_domain: bool, tags: strings, options: { type: 'object' }, links: self },
  ['id', 'name', 'domain_id'],
)
const user = object(
  { id: str, name: str, domain_id: str, enabled: bool, default_project_id: str, description: str, email: str, password_expires_at: nstr, options: { type: 'object' }, federated: { type: 'array' }, links: self },
  ['id', 'name', 'domain_id'],
)
const group = object({ id: str, name: str, domain_id: str, description: nstr, links: self }, ['id', 'name'])
const role = object({ id: str, name: str, domain_id: nstr, description: nstr, options: { type: 'object' }, links: self }, ['id', 'name'])
const roleRef = object({ id: str, name: str, links: self }, ['id', 'name'])
const region = object({ id: str, description: nstr, parent_region_id: nstr, links: self }, ['id'])
const service = object({ id: str, type: str, name: nstr, description: nstr, enabled: bool, links: self }, ['id', 'type'])
const endpoint = object({ id: str, interface: str, region_id: nstr, region: nstr, service_id: str, url: str, enabled: bool, links: self }, ['id', 'interface', 'service_id', 'url'])
const credential = object({ id: str, type: str, user_id: str, project_id: nstr, blob: str, links: self }, ['id', 'type', 'user_id', 'blob'])
const accessRule = object({ id: str, service: str, method: str, path: str, links: self }, ['id', 'service', 'method', 'path'])
const endpointGroup = object({ id: str, name: str, description: nstr, filters: { type: 'object' }, links: self }, ['id', 'name', 'filters'])
const policy = object({ id: str, type: str, blob: str, links: self }, ['id', 'type', 'blob'])
const accessToken = object({ id: str, consumer_id: str, project_id: str, authorizing_user_id: str, expires_at: nstr, links: object({ self: str, roles: str }) }, ['id', 'consumer_id', 'project_id', 'authorizing_user_id'])
const consumer = object({ id: str, description: nstr, secret: { type: 'string', description: 'only when created' }, links: self }, ['id'])
const applicationCredential = object(
  {
    id: str,
    name: str,
    description: nstr,
    user_id: str,
    project_id: str,
    expires_at: nstr,
    unrestricted: bool,
    roles: { type: 'array', items: object({ id: str, name: str, domain_id: nstr }) },
    access_rules: { type: 'array', items: object({ id: str, service: str, method: str, path: str }) },
    links: self,
    secret: { type: 'string', description: 'only when created' },
  },
  ['id', 'name'],
)
const idRef = object({ id: str, name: str, domain: object({ id: str, name: str }) }, ['id'])
const assignment = object({ role: idRef, user: idRef, group: idRef, scope: { type: 'object' }, links: { type: 'object', additionalProperties: str } }, ['role', 'scope', 'links'])
const inference = object({ prior_role: roleRef, implies: { anyOf: [roleRef, { type: 'array', items: roleRef }] } }, ['prior_role', 'implies'])

const catalogEntry = object({
  id: str,
  type: str,
  name: str,
  endpoints: { type: 'array', items: object({ id: str, interface: str, region: nstr, region_id: nstr, url: str }) },
})
const token = object(
  {
    methods: strings,
    user: object({ id: str, name: str, domain: object({ id: str, name: str }), password_expires_at: nstr }, ['id', 'name']),
    audit_ids: strings,
    expires_at: str,
    issued_at: str,
    project: { type: 'object' },
    domain: { type: 'object' },
    system: object({ all: bool }),
    is_domain: bool,
    roles: { type: 'array', items: object({ id: str, name: str }) },
    catalog: { type: 'array', items: catalogEntry },
    application_credential: object({ id: str, name: str, restricted: bool }),
    'OS-OAUTH1': object({ access_token_id: str, consumer_id: str }),
  },
  ['methods', 'user', 'audit_ids', 'expires_at', 'issued_at'],
)

const pageLinks = object({ self: str, previous: nstr, next: nstr })
const versionDoc = object({ id: str, status: str, updated: str, links: { type: 'array' }, 'media-types': { type: 'array' } }, ['id', 'status'])

/** `{ <key>: [item…], links }`: Keystone's list envelope. */
export const list = (key: string, item: Schema): Schema => object({ [key]: { type: 'array', items: item }, links: pageLinks }, [key])
/** `{ <key>: item }` */
export const one = (key: string, item: Schema): Schema => object({ [key]: item }, [key])

export const V = { domain, project, user, group, role, region, service, endpoint, credential, applicationCredential, accessRule, assignment, policy, consumer, accessToken, endpointGroup }

export const A = {
  versions: object({ versions: object({ values: { type: 'array', items: versionDoc } }) }, ['versions']),
  version: one('version', versionDoc),
  /** OS-OAUTH1's request and access tokens: `oauth_token=…&oauth_token_secret=…&oauth_expires_at=…`. */
  oauthForm: { type: 'string', description: 'application/x-www-form-urlencoded: oauth_token, oauth_token_secret, oauth_expires_at' },
  oauthVerifier: one('token', object({ oauth_verifier: str }, ['oauth_verifier'])),
  token: one('token', token),
  catalog: object({ catalog: { type: 'array', items: catalogEntry }, links: pageLinks }, ['catalog']),
  system: object({ system: { type: 'array', items: object({ all: bool }) }, links: { type: 'object' } }, ['system']),
  tags: object({ tags: strings }, ['tags']),
  inference: object({ role_inference: inference, links: self }, ['role_inference']),
  inferences: object({ role_inferences: { type: 'array', items: inference }, links: self }, ['role_inferences']),
}
