/**
 * The world the fuzz suite runs in: a real pcc server (real HTTP, SQLite or PostgreSQL), its personas (the
 * bootstrap admin, a member of another project, a registered host's agent, nobody) and one resource of every
 * kind a path parameter names, made through the API as a user would. Path parameters are filled from these
 * fixtures (or with garbage), so requests reach the handlers' real work and not only their 404s.
 *
 * While operations are fuzzed the task runner is stopped: accepted requests queue their work but nothing moves
 * in the background, so a refused request can be checked to have changed nothing. Between operations repair()
 * runs the queued work and makes again the fixtures an accepted request deleted.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { startTestServer, type Dialect, type TestServer } from '../harness.js'
import { apiCall, LATEST, login, until, type ApiReply } from '../compute-api.js'
import { DEFAULT_IMAGE_NAME } from '../../server/image/default-image.js'
import { baseString, hmacSha1Signature } from '../../server/identity/oauth1-signature.js'

export type PersonaName = 'admin' | 'member' | 'host' | 'anonymous'

export interface Persona {
  name: PersonaName
  headers: Record<string, string>
  projectId?: string
  userId?: string
}

/** Fixture kind → id (or name) of the admin's resource; `memberOwned` holds the member's own where it has one. */
export type Fixtures = Record<string, string>

export interface World {
  server: TestServer
  personas: Record<PersonaName, Persona>
  fixtures: Fixtures
  memberOwned: Fixtures
  /** Runs the work accepted requests queued, then makes again every fixture that no longer exists. */
  repair(): Promise<void>
  /** Makes the admin's shareable fixtures private again (keepPrivate), without the rest of repair. */
  keepPrivate(): Promise<void>
  close(): Promise<void>
}

const COMPUTE = { 'openstack-api-version': `compute ${LATEST}` }
const VOLUME = { 'openstack-api-version': 'volume 3.60' }
const FIXTURE_TIMEOUT_MS = 60_000

class SetupError extends Error {}

function check(reply: ApiReply, what: string): ApiReply {
  if (reply.status >= 300) throw new SetupError(`fuzz world: ${what} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 400)}`)
  return reply
}

/** One fixture: how to tell it still exists and how to make it (after the fixtures it needs). */
interface FixtureSpec {
  kind: string
  exists?: (w: WorldBuilder) => Promise<boolean>
  create: (w: WorldBuilder) => Promise<string>
}

class WorldBuilder {
  readonly fixtures: Fixtures = {}
  readonly memberOwned: Fixtures = {}
  constructor(
    readonly server: TestServer,
    readonly personas: Record<PersonaName, Persona>,
  ) {}

  call(who: PersonaName, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiReply> {
    return apiCall(`${this.server.url}${path}`, method, { body, headers: { ...this.personas[who].headers, ...headers } })
  }

  async must(who: PersonaName, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiReply> {
    return check(await this.call(who, method, path, body, headers), `${who} ${method} ${path}`)
  }

  async found(path: string, headers: Record<string, string> = {}): Promise<boolean> {
    return (await this.call('admin', 'GET', path, undefined, headers)).status === 200
  }

  async waitFor(path: string, headers: Record<string, string>, ready: (body: Record<string, unknown>) => boolean, what: string): Promise<void> {
    await until(what, FIXTURE_TIMEOUT_MS, async () => (ready((await this.call('admin', 'GET', path, undefined, headers)).body as Record<string, unknown>) ? true : undefined))
  }
}

const f = (kind: string, create: FixtureSpec['create'], exists?: FixtureSpec['exists']): FixtureSpec => ({ kind, create, exists })

/** An OAuth 1.0a `Authorization` header for a POST, signed with HMAC-SHA1 (docs/identity.md, "OAuth 1.0a delegation"). */
function oauthHeader(url: string, consumer: { id: string; secret: string }, token: { key: string; secret: string } | undefined, extra: [string, string][]): string {
  const params = new Map<string, string>([
    ['oauth_consumer_key', consumer.id],
    ['oauth_nonce', randomBytes(12).toString('hex')],
    ['oauth_signature_method', 'HMAC-SHA1'],
    ['oauth_timestamp', String(Math.floor(Date.now() / 1000))],
    ...(token ? [['oauth_token', token.key] as [string, string]] : []),
    ...extra,
  ])
  params.set('oauth_signature', hmacSha1Signature(baseString('POST', url, params, []), consumer.secret, token?.secret ?? ''))
  return `OAuth ${[...params].map(([k, v]) => `${k}="${encodeURIComponent(v)}"`).join(', ')}`
}
const name = (what: string) => `fuzz-${what}-${randomUUID().slice(0, 6)}`

/** Every fixture, in the order they depend on each other. */
const FIXTURES: FixtureSpec[] = [
  // Identity: objects of their own, never the admin's, so deleting one breaks nothing.
  f('domain', async (w) => (await w.must('admin', 'POST', '/identity/v3/domains', { domain: { name: name('domain') } })).body.domain.id, (w) => w.found(`/identity/v3/domains/${w.fixtures.domain}`)),
  f('identityProject', async (w) => {
    const id = (await w.must('admin', 'POST', '/identity/v3/projects', { project: { name: name('project') } })).body.project.id
    await w.must('admin', 'PUT', `/identity/v3/projects/${id}/tags/fuzztag`)
    return id
  }, (w) => w.found(`/identity/v3/projects/${w.fixtures.identityProject}`)),
  f('user', async (w) => (await w.must('admin', 'POST', '/identity/v3/users', { user: { name: name('user'), password: 'fuzz-password-1' } })).body.user.id, (w) => w.found(`/identity/v3/users/${w.fixtures.user}`)),
  f('group', async (w) => {
    const id = (await w.must('admin', 'POST', '/identity/v3/groups', { group: { name: name('group') } })).body.group.id
    if (w.fixtures.user) await w.must('admin', 'PUT', `/identity/v3/groups/${id}/users/${w.fixtures.user}`)
    return id
  }, (w) => w.found(`/identity/v3/groups/${w.fixtures.group}`)),
  f('impliedRole', async (w) => (await w.must('admin', 'POST', '/identity/v3/roles', { role: { name: name('implied') } })).body.role.id, (w) => w.found(`/identity/v3/roles/${w.fixtures.impliedRole}`)),
  f('role', async (w) => {
    const id = (await w.must('admin', 'POST', '/identity/v3/roles', { role: { name: name('role') } })).body.role.id
    await w.must('admin', 'PUT', `/identity/v3/roles/${id}/implies/${w.fixtures.impliedRole}`)
    await w.must('admin', 'PUT', `/identity/v3/projects/${w.fixtures.identityProject}/users/${w.fixtures.user}/roles/${id}`)
    return id
  }, (w) => w.found(`/identity/v3/roles/${w.fixtures.role}`)),
  f('region', async (w) => (await w.must('admin', 'POST', '/identity/v3/regions', { region: { id: name('region') } })).body.region.id, (w) => w.found(`/identity/v3/regions/${w.fixtures.region}`)),
  f('service', async (w) => (await w.must('admin', 'POST', '/identity/v3/services', { service: { type: 'fuzz', name: name('service') } })).body.service.id, (w) => w.found(`/identity/v3/services/${w.fixtures.service}`)),
  f('endpoint', async (w) => {
    const body = { endpoint: { service_id: w.fixtures.service, interface: 'public', url: 'http://127.0.0.1:1/fuzz', region_id: w.fixtures.region } }
    return (await w.must('admin', 'POST', '/identity/v3/endpoints', body)).body.endpoint.id
  }, (w) => w.found(`/identity/v3/endpoints/${w.fixtures.endpoint}`)),
  f('credential', async (w) => {
    const body = { credential: { type: 'ec2', user_id: w.personas.admin.userId, blob: JSON.stringify({ access: 'fuzz', secret: 'fuzz' }) } }
    return (await w.must('admin', 'POST', '/identity/v3/credentials', body)).body.credential.id
  }, (w) => w.found(`/identity/v3/credentials/${w.fixtures.credential}`)),
  f('applicationCredential', async (w) => {
    const path = `/identity/v3/users/${w.personas.admin.userId}/application_credentials`
    return (await w.must('admin', 'POST', path, { application_credential: { name: name('appcred') } })).body.application_credential.id
  }, (w) => w.found(`/identity/v3/users/${w.personas.admin.userId}/application_credentials/${w.fixtures.applicationCredential}`)),
  f('accessRule', async (w) => {
    const path = `/identity/v3/users/${w.personas.admin.userId}/application_credentials`
    const body = { application_credential: { name: name('ruled'), access_rules: [{ service: 'compute', method: 'GET', path: '/v2.1/servers' }] } }
    return (await w.must('admin', 'POST', path, body)).body.application_credential.access_rules[0].id
  }, (w) => w.found(`/identity/v3/users/${w.personas.admin.userId}/access_rules/${w.fixtures.accessRule}`)),
  f('domainConfigGroup', async (w) => {
    await w.must('admin', 'PUT', `/identity/v3/domains/${w.fixtures.domain}/config`, { config: { identity: { driver: 'ldap' }, ldap: { url: 'ldap://fuzz/' } } })
    w.fixtures.domainConfigOption = 'url'
    return 'ldap'
  }, (w) => w.found(`/identity/v3/domains/${w.fixtures.domain}/config/ldap/url`)),
  f('policyBlob', async (w) => (await w.must('admin', 'POST', '/identity/v3/policies', { policy: { type: 'application/json', blob: '{}' } })).body.policy.id, (w) => w.found(`/identity/v3/policies/${w.fixtures.policyBlob}`)),
  f('oauthConsumer', async (w) => (await w.must('admin', 'POST', '/identity/v3/OS-OAUTH1/consumers', { consumer: { description: name('consumer') } })).body.consumer.id, (w) => w.found(`/identity/v3/OS-OAUTH1/consumers/${w.fixtures.oauthConsumer}`)),
  f('oauthAccessToken', async (w) => {
    // A consumer of its own (the oauthConsumer fixture's secret is not kept), then the OS-OAUTH1 dance.
    const consumer = (await w.must('admin', 'POST', '/identity/v3/OS-OAUTH1/consumers', { consumer: { description: name('delegate') } })).body.consumer
    const form = (text: unknown) => Object.fromEntries(String(text).split('&').map((kv) => kv.split('=') as [string, string]))
    const request = form((await w.must('admin', 'POST', '/identity/v3/OS-OAUTH1/request_token', undefined, {
      authorization: oauthHeader(`${w.server.url}/identity/v3/OS-OAUTH1/request_token`, consumer, undefined, [['oauth_callback', 'oob']]),
      'requested-project-id': w.personas.admin.projectId!,
    })).body)
    const verifier = (await w.must('admin', 'PUT', `/identity/v3/OS-OAUTH1/authorize/${request.oauth_token}`, { roles: [{ name: 'reader' }] })).body.token.oauth_verifier as string
    const access = form((await w.must('admin', 'POST', '/identity/v3/OS-OAUTH1/access_token', undefined, {
      authorization: oauthHeader(`${w.server.url}/identity/v3/OS-OAUTH1/access_token`, consumer, { key: request.oauth_token, secret: request.oauth_token_secret }, [['oauth_verifier', verifier]]),
    })).body)
    w.fixtures.accessTokenRole = w.fixtures.accessTokenRole ?? (await w.must('admin', 'GET', '/identity/v3/roles?name=reader')).body.roles[0].id
    return access.oauth_token
  }, (w) => w.found(`/identity/v3/users/${w.personas.admin.userId}/OS-OAUTH1/access_tokens/${w.fixtures.oauthAccessToken}`)),
  f('endpointGroup', async (w) => {
    const id = (await w.must('admin', 'POST', '/identity/v3/OS-EP-FILTER/endpoint_groups', { endpoint_group: { name: name('epgroup'), filters: { service_id: w.fixtures.service } } })).body.endpoint_group.id
    await w.must('admin', 'PUT', `/identity/v3/OS-EP-FILTER/endpoint_groups/${id}/projects/${w.fixtures.identityProject}`)
    await w.must('admin', 'PUT', `/identity/v3/OS-EP-FILTER/projects/${w.fixtures.identityProject}/endpoints/${w.fixtures.endpoint}`)
    return id
  }, (w) => w.found(`/identity/v3/OS-EP-FILTER/endpoint_groups/${w.fixtures.endpointGroup}`)),

  // Network.
  f('network', async (w) => (await w.must('admin', 'POST', '/network/v2.0/networks', { network: { name: name('net'), tags: ['fuzztag'] } })).body.network.id, (w) => w.found(`/network/v2.0/networks/${w.fixtures.network}`)),
  f('subnet', async (w) => {
    const body = { subnet: { network_id: w.fixtures.network, ip_version: 4, cidr: '10.77.0.0/24', name: name('subnet') } }
    return (await w.must('admin', 'POST', '/network/v2.0/subnets', body)).body.subnet.id
  }, (w) => w.found(`/network/v2.0/subnets/${w.fixtures.subnet}`)),
  f('externalNetwork', async (w) => {
    const id = (await w.must('admin', 'POST', '/network/v2.0/networks', { network: { name: name('ext'), 'router:external': true } })).body.network.id
    await w.must('admin', 'POST', '/network/v2.0/subnets', { subnet: { network_id: id, ip_version: 4, cidr: '192.0.2.0/24' } })
    return id
  }, (w) => w.found(`/network/v2.0/networks/${w.fixtures.externalNetwork}`)),
  f('addressScope', async (w) => (await w.must('admin', 'POST', '/network/v2.0/address-scopes', { address_scope: { name: name('scope'), ip_version: 4 } })).body.address_scope.id, (w) => w.found(`/network/v2.0/address-scopes/${w.fixtures.addressScope}`)),
  f('subnetPool', async (w) => (await w.must('admin', 'POST', '/network/v2.0/subnetpools', { subnetpool: { name: name('pool'), prefixes: ['10.200.0.0/16'], default_prefixlen: 24, tags: ['fuzztag'] } })).body.subnetpool.id, (w) => w.found(`/network/v2.0/subnetpools/${w.fixtures.subnetPool}`)),
  f('port', async (w) => (await w.must('admin', 'POST', '/network/v2.0/ports', { port: { network_id: w.fixtures.network, name: name('port') } })).body.port.id, (w) => w.found(`/network/v2.0/ports/${w.fixtures.port}`)),
  f('securityGroup', async (w) => (await w.must('admin', 'POST', '/network/v2.0/security-groups', { security_group: { name: name('sg') } })).body.security_group.id, (w) => w.found(`/network/v2.0/security-groups/${w.fixtures.securityGroup}`)),
  f('securityGroupRule', async (w) => {
    const body = { security_group_rule: { security_group_id: w.fixtures.securityGroup, direction: 'ingress', protocol: 'tcp', port_range_min: 22, port_range_max: 22 } }
    return (await w.must('admin', 'POST', '/network/v2.0/security-group-rules', body)).body.security_group_rule.id
  }, (w) => w.found(`/network/v2.0/security-group-rules/${w.fixtures.securityGroupRule}`)),
  f('router', async (w) => {
    const id = (await w.must('admin', 'POST', '/network/v2.0/routers', { router: { name: name('router'), external_gateway_info: { network_id: w.fixtures.externalNetwork } } })).body.router.id
    await w.must('admin', 'PUT', `/network/v2.0/routers/${id}/add_router_interface`, { subnet_id: w.fixtures.subnet })
    return id
  }, (w) => w.found(`/network/v2.0/routers/${w.fixtures.router}`)),
  f('floatingIp', async (w) => (await w.must('admin', 'POST', '/network/v2.0/floatingips', { floatingip: { floating_network_id: w.fixtures.externalNetwork } })).body.floatingip.id, (w) => w.found(`/network/v2.0/floatingips/${w.fixtures.floatingIp}`)),

  // Image and block storage.
  f('image', async (w) => {
    const id = (await w.must('admin', 'POST', '/image/v2/images', { name: name('image'), disk_format: 'raw', container_format: 'bare', tags: ['fuzztag'] })).body.id
    await w.must('admin', 'POST', `/image/v2/images/${id}/members`, { member: w.personas.member.projectId })
    return id
  }, (w) => w.found(`/image/v2/images/${w.fixtures.image}`)),
  // A private namespace of the admin's project holding one of everything (names, not ids, in the paths).
  f('metadefNamespace', async (w) => {
    const ns = name('ns')
    const body = {
      namespace: ns, visibility: 'private', resource_type_associations: [{ name: 'OS::Glance::Image' }], properties: { fuzzprop: { title: 'Fuzz', type: 'string' } },
      objects: [{ name: 'fuzzobject' }], tags: [{ name: 'fuzztag' }],
    }
    await w.must('admin', 'POST', '/image/v2/metadefs/namespaces', body)
    Object.assign(w.fixtures, { metadefObject: 'fuzzobject', metadefProperty: 'fuzzprop', metadefTag: 'fuzztag', metadefResourceType: 'OS::Glance::Image' })
    return ns
  }, async (w) => {
    const shown = await w.call('admin', 'GET', `/image/v2/metadefs/namespaces/${w.fixtures.metadefNamespace}`)
    const body = shown.body as { objects?: unknown[]; properties?: object; tags?: unknown[]; resource_type_associations?: unknown[] }
    return shown.status === 200 && !!body.objects && !!body.properties && !!body.tags && !!body.resource_type_associations
  }),
  f('volumeType', async (w) => {
    const body = { volume_type: { name: name('type'), extra_specs: { fuzzkey: 'fuzz' } } }
    return (await w.must('admin', 'POST', `/volume/v3/types`, body, VOLUME)).body.volume_type.id
  }, (w) => w.found(`/volume/v3/types/${w.fixtures.volumeType}`, VOLUME)),
  // QoS specs with a front-end limit, associated with the fuzz volume type.
  f('qosSpecs', async (w) => {
    const body = { qos_specs: { name: name('qos'), consumer: 'front-end', total_iops_sec: '1000' } }
    const id = (await w.must('admin', 'POST', '/volume/v3/qos-specs', body, VOLUME)).body.qos_specs.id
    await w.must('admin', 'GET', `/volume/v3/qos-specs/${id}/associate?vol_type_id=${w.fixtures.volumeType}`, undefined, VOLUME)
    return id
  }, (w) => w.found(`/volume/v3/qos-specs/${w.fixtures.qosSpecs}`, VOLUME)),
  f('volume', async (w) => {
    const id = (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('volume'), metadata: { fuzzkey: 'fuzz' } } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${id}`, VOLUME, (b) => (b.volume as { status: string }).status === 'available', 'the fuzz volume to be available')
    return id
  }, (w) => w.found(`/volume/v3/volumes/${w.fixtures.volume}`, VOLUME)),
  f('snapshot', async (w) => {
    const id = (await w.must('admin', 'POST', '/volume/v3/snapshots', { snapshot: { volume_id: w.fixtures.volume, name: name('snap'), metadata: { fuzzkey: 'fuzz' } } }, VOLUME)).body.snapshot.id
    await w.waitFor(`/volume/v3/snapshots/${id}`, VOLUME, (b) => (b.snapshot as { status: string }).status === 'available', 'the fuzz snapshot to be available')
    return id
  }, (w) => w.found(`/volume/v3/snapshots/${w.fixtures.snapshot}`, VOLUME)),
  // A backup of a volume of its own (fuzzed actions on the fuzz volume must not stop it being backed up again).
  f('volumeBackup', async (w) => {
    const prior = w.fixtures.backedUpVolume
    const reusable = prior && (await w.call('admin', 'GET', `/volume/v3/volumes/${prior}`, undefined, VOLUME)).body?.volume?.status === 'available'
    const volume = reusable ? prior : (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('backedup') } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${volume}`, VOLUME, (b) => (b.volume as { status: string }).status === 'available', 'the volume to back up to be available')
    w.fixtures.backedUpVolume = volume
    const id = (await w.must('admin', 'POST', '/volume/v3/backups', { backup: { volume_id: volume, name: name('backup') } }, VOLUME)).body.backup.id
    await w.waitFor(`/volume/v3/backups/${id}`, VOLUME, (b) => (b.backup as { status: string }).status === 'available', 'the fuzz backup to be available')
    return id
  }, (w) => w.found(`/volume/v3/backups/${w.fixtures.volumeBackup}`, VOLUME)),

  // A volume offered to another project: the transfer's auth key is never needed (accepting would end it). A
  // withdrawn transfer leaves its volume available: offered again, so repairs do not use up the admin's quota.
  f('volumeTransfer', async (w) => {
    const prior = w.fixtures.offeredVolume
    const reusable = prior && (await w.call('admin', 'GET', `/volume/v3/volumes/${prior}`, undefined, VOLUME)).body?.volume?.status === 'available'
    const id = reusable ? prior : (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('offered') } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${id}`, VOLUME, (b) => (b.volume as { status: string }).status === 'available', 'the volume to offer to be available')
    w.fixtures.offeredVolume = id
    return (await w.must('admin', 'POST', '/volume/v3/os-volume-transfer', { transfer: { volume_id: id, name: name('transfer') } }, VOLUME)).body.transfer.id
  }, (w) => w.found(`/volume/v3/os-volume-transfer/${w.fixtures.volumeTransfer}`, VOLUME)),

  // A user message: a volume of a type no backend fits fails, and its project is told why; the volume goes.
  f('volumeMessage', async (w) => {
    const type = (await w.must('admin', 'POST', `/volume/v3/types`, { volume_type: { name: name('unfit'), extra_specs: { vendor_name: 'nobody' } } }, VOLUME)).body.volume_type.id
    const id = (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, volume_type: type } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${id}`, VOLUME, (b) => (b.volume as { status: string }).status === 'error', 'the unfit volume to fail')
    const messages = (await w.must('admin', 'GET', '/volume/v3/messages', undefined, VOLUME)).body.messages as { id: string; resource_uuid: string }[]
    await w.must('admin', 'DELETE', `/volume/v3/volumes/${id}`, undefined, VOLUME)
    return messages.find((m) => m.resource_uuid === id)!.id
  }, (w) => w.found(`/volume/v3/messages/${w.fixtures.volumeMessage}`, VOLUME)),

  // A generic volume group of the fuzz volume type with one volume, and a group snapshot of it.
  f('groupType', async (w) => (await w.must('admin', 'POST', '/volume/v3/group_types', { group_type: { name: name('grouptype'), group_specs: { fuzzkey: 'fuzz' } } }, VOLUME)).body.group_type.id, (w) => w.found(`/volume/v3/group_types/${w.fixtures.groupType}`, VOLUME)),
  f('volumeGroup', async (w) => {
    const id = (await w.must('admin', 'POST', '/volume/v3/groups', { group: { name: name('group'), group_type: w.fixtures.groupType, volume_types: [w.fixtures.volumeType] } }, VOLUME)).body.group.id
    const volume = (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('member'), volume_type: w.fixtures.volumeType, group_id: id } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${volume}`, VOLUME, (b) => (b.volume as { status: string }).status === 'available', 'the fuzz group volume to be available')
    return id
  }, (w) => w.found(`/volume/v3/groups/${w.fixtures.volumeGroup}`, VOLUME)),
  f('groupSnapshot', async (w) => {
    // A fuzzed reset_status may have left the group in another status; only an available group is snapshotted.
    await w.must('admin', 'POST', `/volume/v3/groups/${w.fixtures.volumeGroup}/action`, { reset_status: { status: 'available' } }, VOLUME)
    const id = (await w.must('admin', 'POST', '/volume/v3/group_snapshots', { group_snapshot: { group_id: w.fixtures.volumeGroup, name: name('groupsnap') } }, VOLUME)).body.group_snapshot.id
    await w.waitFor(`/volume/v3/group_snapshots/${id}`, VOLUME, (b) => (b.group_snapshot as { status: string }).status === 'available', 'the fuzz group snapshot to be available')
    return id
  }, (w) => w.found(`/volume/v3/group_snapshots/${w.fixtures.groupSnapshot}`, VOLUME)),

  // Compute.
  f('flavor', async (w) => {
    const id = (await w.must('admin', 'POST', '/compute/v2.1/flavors', { flavor: { name: name('flavor'), ram: 64, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false } }, COMPUTE)).body.flavor.id
    await w.must('admin', 'POST', `/compute/v2.1/flavors/${id}/os-extra_specs`, { extra_specs: { fuzzkey: 'fuzz' } }, COMPUTE)
    return id
  }, (w) => w.found(`/compute/v2.1/flavors/${w.fixtures.flavor}`, COMPUTE)),
  f('keypair', async (w) => (await w.must('admin', 'POST', '/compute/v2.1/os-keypairs', { keypair: { name: name('key'), public_key: SSH_KEY } }, COMPUTE)).body.keypair.name, (w) => w.found(`/compute/v2.1/os-keypairs/${w.fixtures.keypair}`, COMPUTE)),
  f('serverGroup', async (w) => (await w.must('admin', 'POST', '/compute/v2.1/os-server-groups', { server_group: { name: name('group'), policy: 'anti-affinity' } }, COMPUTE)).body.server_group.id, (w) => w.found(`/compute/v2.1/os-server-groups/${w.fixtures.serverGroup}`, COMPUTE)),
  f('aggregate', async (w) => String((await w.must('admin', 'POST', '/compute/v2.1/os-aggregates', { aggregate: { name: name('aggregate') } }, COMPUTE)).body.aggregate.id), (w) => w.found(`/compute/v2.1/os-aggregates/${w.fixtures.aggregate}`, COMPUTE)),
  f('server', async (w) => {
    const image = (await w.must('admin', 'GET', `/image/v2/images?name=${encodeURIComponent(DEFAULT_IMAGE_NAME)}`)).body.images[0]?.id
    const body = { server: { name: name('server'), imageRef: image, flavorRef: '1', networks: [{ uuid: w.fixtures.network }], metadata: { fuzzkey: 'fuzz' }, tags: ['fuzztag'] } }
    const created = await w.must('admin', 'POST', '/compute/v2.1/servers', body, COMPUTE)
    const id = created.body.server.id as string
    await w.waitFor(`/compute/v2.1/servers/${id}`, COMPUTE, (b) => ['ACTIVE', 'ERROR'].includes((b.server as { status: string }).status), 'the fuzz server to build')
    w.fixtures.serverAction = created.requestId
    return id
  }, (w) => w.found(`/compute/v2.1/servers/${w.fixtures.server}`, COMPUTE)),
  f('attachedVolume', async (w) => {
    const id = (await w.must('admin', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('attached') } }, VOLUME)).body.volume.id
    await w.waitFor(`/volume/v3/volumes/${id}`, VOLUME, (b) => (b.volume as { status: string }).status === 'available', 'the volume to attach to be available')
    await w.must('admin', 'POST', `/compute/v2.1/servers/${w.fixtures.server}/os-volume_attachments`, { volumeAttachment: { volumeId: id } }, COMPUTE)
    await w.waitFor(`/volume/v3/volumes/${id}`, VOLUME, (b) => (b.volume as { status: string }).status === 'in-use', 'the fuzz volume to be attached')
    return id
  }, async (w) => (await w.call('admin', 'GET', `/compute/v2.1/servers/${w.fixtures.server}/os-volume_attachments/${w.fixtures.attachedVolume}`, undefined, COMPUTE)).status === 200),

  // The resource manager: a registered host whose agent is a persona.
  f('registeredHost', async (w) => {
    const token = (await w.must('admin', 'POST', '/resmgr/v1/registration-tokens', {})).body.token
    const hostId = randomUUID()
    const registration = {
      registration_token: token,
      host_id: hostId,
      hostname: `fuzz-host-${hostId.slice(0, 6)}`,
      os_info: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12' },
      arch: 'x86_64',
      cpu: { count: 2, model: 'fuzz', virtualization: true },
      memory_mb: 2048,
      disk_gb: 20,
      nics: [],
      agent_version: 'fuzz',
    }
    const registered = await w.must('anonymous', 'POST', '/resmgr/v1/hosts/register', registration)
    w.personas.host.headers = { authorization: `Bearer ${registered.body.credential}` }
    return hostId
  }, (w) => w.found(`/resmgr/v1/hosts/${w.fixtures.registeredHost}`)),
]

/** The member's own resources of a few kinds, so its requests succeed too (and are never the admin's). */
const MEMBER_FIXTURES: FixtureSpec[] = [
  f('network', async (w) => (await w.must('member', 'POST', '/network/v2.0/networks', { network: { name: name('member-net') } })).body.network.id),
  f('securityGroup', async (w) => (await w.must('member', 'POST', '/network/v2.0/security-groups', { security_group: { name: name('member-sg') } })).body.security_group.id),
  f('keypair', async (w) => (await w.must('member', 'POST', '/compute/v2.1/os-keypairs', { keypair: { name: name('member-key'), public_key: SSH_KEY } }, COMPUTE)).body.keypair.name),
  f('volume', async (w) => (await w.must('member', 'POST', '/volume/v3/volumes', { volume: { size: 1, name: name('member-volume') } }, VOLUME)).body.volume.id),
]

const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv2p9pbpbL3ISMaz9/jY5m3yYv2tZ9nJgoSGxBkG5pE fuzz@pcc'

const MEMBER_PASSWORD = 'fuzz-member-password-1'

/** A project of its own and a user with the member role on it ("a member of another project"), made by the admin. */
async function memberPersona(w: WorldBuilder): Promise<Persona> {
  const projectName = name('other')
  const userName = name('member')
  const projectId = (await w.must('admin', 'POST', '/identity/v3/projects', { project: { name: projectName } })).body.project.id
  const userId = (await w.must('admin', 'POST', '/identity/v3/users', { user: { name: userName, password: MEMBER_PASSWORD, default_project_id: projectId } })).body.user.id
  const member = (await w.must('admin', 'GET', '/identity/v3/roles?name=member')).body.roles[0].id
  await w.must('admin', 'PUT', `/identity/v3/projects/${projectId}/users/${userId}/roles/${member}`)
  const { token } = await login(w.server.url, MEMBER_PASSWORD, userName, projectName)
  return { name: 'member', headers: { 'x-auth-token': token }, projectId, userId }
}

async function drain(server: TestServer): Promise<void> {
  const db = server.deps.store.db
  await until('the queued work to finish', FIXTURE_TIMEOUT_MS, async () => {
    const pending = await db.selectFrom('tasks').select('id').where('status', 'in', ['queued', 'running']).where('run_after', '<=', Date.now() + 2000).executeTakeFirst()
    return pending === undefined ? true : undefined
  }).catch(() => {
    // Work that keeps failing retries later; fixtures are checked one by one below regardless.
  })
}

/**
 * What the cross-project property relies on, set again after accepted writes: the admin's network and address
 * scope private (a fuzzed update may have shared them), its image shared with the member's project only.
 */
async function keepPrivate(w: WorldBuilder): Promise<void> {
  const { fixtures } = w
  await w.call('admin', 'PUT', `/network/v2.0/networks/${fixtures.network}`, { network: { shared: false } })
  await w.call('admin', 'PUT', `/network/v2.0/address-scopes/${fixtures.addressScope}`, { address_scope: { shared: false } })
  // Glance's patch media type, which apiCall (JSON only) does not send.
  await fetch(`${w.server.url}/image/v2/images/${fixtures.image}`, {
    method: 'PATCH',
    headers: { ...w.personas.admin.headers, 'content-type': 'application/openstack-images-v2.1-json-patch' },
    body: JSON.stringify([{ op: 'replace', path: '/visibility', value: 'shared' }]),
  }).then((r) => r.arrayBuffer())
}

/** Names and ids that come with the fixtures or the bootstrap rather than being made. */
async function derive(w: WorldBuilder): Promise<void> {
  const { fixtures, personas } = w
  Object.assign(fixtures, {
    metadataKey: 'fuzzkey',
    tag: 'fuzztag',
    project: personas.admin.projectId,
    memberProject: personas.member.projectId,
    adminUser: personas.admin.userId,
    hostRole: 'hypervisor',
    extension: 'router',
    // Not the default class: an accepted update of it would change every project's quotas under the other operations.
    quotaClass: 'fuzzclass',
    // The control plane's volume service (os-hosts, capabilities).
    volumeHost: 'controller@file',
  })
  w.memberOwned.project = personas.member.projectId!
  fixtures.idpClient = Object.keys(await w.server.deps.idp.clients.secrets('builtin'))[0]
  const hypervisor = (await w.must('admin', 'GET', '/compute/v2.1/os-hypervisors', undefined, COMPUTE)).body.hypervisors[0]
  fixtures.simulatedHost = hypervisor?.id
  fixtures.simulatedHostName = hypervisor?.hypervisor_hostname
  // Neutron agents are derived from the simulated hosts' roles; deleting one forgets only its settings.
  fixtures.networkAgent = (await w.must('admin', 'GET', '/network/v2.0/agents')).body.agents[0]?.id
  const server = `/compute/v2.1/servers/${fixtures.server}`
  fixtures.serverPort = (await w.call('admin', 'GET', `${server}/os-interface`, undefined, COMPUTE)).body.interfaceAttachments?.[0]?.port_id
  fixtures.networkLabel = Object.keys((await w.call('admin', 'GET', `${server}/ips`, undefined, COMPUTE)).body.addresses ?? {})[0]
  const attachments = (await w.call('admin', 'GET', '/volume/v3/attachments', undefined, VOLUME)).body.attachments ?? []
  fixtures.volumeAttachment = attachments.find((a: { volume_id: string }) => a.volume_id === fixtures.attachedVolume)?.id
}

async function ensure(w: WorldBuilder, specs: FixtureSpec[], into: Fixtures): Promise<void> {
  // A repair follows every accepted write: whether each fixture is still there is asked all at once (no answer
  // depends on another), and only the missing ones are made again, in their order.
  const present = await Promise.all(specs.map(async (spec) => into[spec.kind] !== undefined && (!spec.exists || (await spec.exists(w)))))
  for (const [i, spec] of specs.entries()) {
    if (!present[i]) into[spec.kind] = await spec.create(w)
  }
}

export async function startWorld(dialect: Dialect = 'sqlite'): Promise<World> {
  const server = await startTestServer({
    dialect,
    env: { PCC_SIMULATED_HOSTS: '1', PCC_RECONCILE_SECONDS: '0', PCC_TOKEN_EXPIRATION_SECONDS: String(7 * 86400), PCC_SIMULATED_DELAY_MS: '0', PCC_LOCKOUT_FAILURE_ATTEMPTS: '0' },
  })
  try {
    const db = server.deps.store.db
    const admin = await db.selectFrom('users').select('id').where('name', '=', 'admin').executeTakeFirstOrThrow()
    const adminToken = (await server.deps.tokens.issue({ userId: admin.id, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    const personas: Record<PersonaName, Persona> = {
      admin: { name: 'admin', headers: { 'x-auth-token': adminToken }, projectId: server.bootstrap.adminProjectId, userId: admin.id },
      member: { name: 'member', headers: {} },
      host: { name: 'host', headers: {} },
      anonymous: { name: 'anonymous', headers: {} },
    }
    const w = new WorldBuilder(server, personas)
    personas.member = await memberPersona(w)
    const repair = async () => {
      server.deps.runner.start()
      try {
        await drain(server)
        await ensure(w, FIXTURES, w.fixtures)
        await ensure(w, MEMBER_FIXTURES, w.memberOwned)
        await drain(server)
        await keepPrivate(w)
        await derive(w)
      } finally {
        await server.deps.runner.stop(5000)
      }
    }
    await server.clusterJobs.stop()
    await repair()
    return { server, personas, fixtures: w.fixtures, memberOwned: w.memberOwned, repair, keepPrivate: () => keepPrivate(w), close: () => server.close() }
  } catch (err) {
    await server.close()
    throw err
  }
}
