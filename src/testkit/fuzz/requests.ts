/**
 * Requests for one operation of /openapi.json, as fast-check arbitraries. A plan names its path parameters
 * symbolically (a fixture kind, or garbage) so it can be replayed against the world as it is when it runs;
 * materialize() turns it into bytes on the wire: persona's credentials, percent-encoded path and query (raw
 * escapes kept raw), headers (microversions in and out of range, odd content types) and a body (JSON from the
 * schema, or invalid UTF-8, malformed or deeply nested text).
 */
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import type { JsonSchema, Operation, OpenApiDocument, OpenApiParameter } from '../openapi.js'
import { NASTY_STRINGS, valueFor, type Mode } from './values.js'
import type { PersonaName, World } from './world.js'
import { MAX_VOLUME_VERSION, parseVersion } from '../../server/volume/microversion.js'

/** A path parameter: a fixture (the admin's or the member's own), or a literal. */
export type ParamPlan = { fixture: string; owner: 'admin' | 'member' } | { literal: string; raw?: boolean }

export type BodyPlan = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'text'; text: string } | { kind: 'bytes'; base64: string }

export interface Plan {
  persona: PersonaName
  params: Record<string, ParamPlan>
  /** key, value, and whether value is already encoded (raw escapes such as %ff stay as they are). */
  query: [string, string, boolean][]
  headers: Record<string, string>
  body: BodyPlan
}

export interface WireRequest {
  method: string
  url: string
  headers: Record<string, string>
  body?: Buffer
}

/** `{segment}/{param}` → the fixture kind it names; `{service}:{segment}/{param}` where two services differ. */
const PARAM_KINDS: Record<string, string> = {
  'servers/id': 'server',
  'os-instance-actions/requestId': 'serverAction',
  'os-interface/sub': 'serverPort',
  'ips/sub': 'networkLabel',
  'os-volume_attachments/volumeId': 'attachedVolume',
  'metadata/key': 'metadataKey',
  'os-extra_specs/key': 'metadataKey',
  'tags/tag': 'tag',
  'flavors/id': 'flavor',
  'os-keypairs/name': 'keypair',
  'os-server-groups/id': 'serverGroup',
  'os-hypervisors/id': 'simulatedHost',
  // Nova's proxies of the other services' resources (2.1–2.35).
  'os-volumes/id': 'volume',
  'os-snapshots/id': 'snapshot',
  'os-networks/id': 'network',
  'os-tenant-networks/id': 'network',
  'os-security-groups/id': 'securityGroup',
  'os-security-group-rules/id': 'securityGroupRule',
  'os-floating-ips/id': 'floatingIp',
  'os-services/id': 'simulatedHost',
  'os-aggregates/id': 'aggregate',
  'os-hosts/host': 'simulatedHostName',
  'os-quota-class-sets/className': 'quotaClass',
  'os-quota-sets/projectId': 'project',
  'os-simple-tenant-usage/projectId': 'project',
  'os-quota-sets/target': 'project',
  'quotas/project': 'project',
  'v3/project_id': 'project',
  'networks/id': 'network',
  'subnets/id': 'subnet',
  'subnetpools/id': 'subnetPool',
  'address-scopes/id': 'addressScope',
  'ports/id': 'port',
  'security-groups/id': 'securityGroup',
  'security-group-rules/id': 'securityGroupRule',
  'routers/id': 'router',
  'floatingips/id': 'floatingIp',
  'agents/id': 'networkAgent',
  'extensions/alias': 'extension',
  'images/id': 'image',
  'members/member': 'memberProject',
  'volumes/id': 'volume',
  'snapshots/id': 'snapshot',
  'backups/id': 'volumeBackup',
  'types/id': 'volumeType',
  'default-types/id': 'project',
  'qos-specs/id': 'qosSpecs',
  'group_types/id': 'groupType',
  'volume:groups/id': 'volumeGroup',
  'group_snapshots/id': 'groupSnapshot',
  'attachments/id': 'volumeAttachment',
  'messages/id': 'volumeMessage',
  'os-volume-transfer/id': 'volumeTransfer',
  'volume-transfers/id': 'volumeTransfer',
  'volume:os-hosts/host': 'volumeHost',
  'capabilities/host': 'volumeHost',
  'os-quota-class-sets/name': 'quotaClass',
  'domains/id': 'domain',
  'projects/id': 'identityProject',
  'users/id': 'user',
  'users/userId': 'user',
  'users/actorId': 'user',
  'users/user_id': 'adminUser',
  'groups/id': 'group',
  'groups/actorId': 'group',
  'roles/id': 'role',
  'roles/roleId': 'role',
  'implies/implied': 'impliedRole',
  'roles/role': 'hostRole',
  'regions/id': 'region',
  'services/id': 'service',
  'endpoints/id': 'endpoint',
  'credentials/credential_id': 'credential',
  'application_credentials/credential_id': 'applicationCredential',
  'access_rules/access_rule_id': 'accessRule',
  'config/group': 'domainConfigGroup',
  '{group}/option': 'domainConfigOption',
  'policies/id': 'policyBlob',
  'consumers/id': 'oauthConsumer',
  'access_tokens/access_token_id': 'oauthAccessToken',
  'roles/role_id': 'accessTokenRole',
  'endpoint_groups/id': 'endpointGroup',
  'projects/project_id': 'identityProject',
  'endpoints/endpoint_id': 'endpoint',
  'namespaces/ns': 'metadefNamespace',
  'objects/name': 'metadefObject',
  'properties/name': 'metadefProperty',
  'tags/name': 'metadefTag',
  'resource_types/name': 'metadefResourceType',
  'hosts/id': 'registeredHost',
  'images/imageId': 'image',
  'transfers/serverId': 'server',
  'metadata/portId': 'port',
  'idpclients/clientId': 'idpClient',
}

/**
 * Kinds a project owns: to a member of another project the admin's one must look exactly like one that does
 * not exist (never visible, never a 403 that tells it exists). Not `volumeTransfer`: every project may accept a
 * transfer by its id, and a wrong key is 400 where a missing transfer is 404, as in Cinder (its show, list and
 * delete are 404 to other projects: test/volume/transfers.test.ts).
 */
export const OWNED_KINDS = new Set([
  'server', 'serverAction', 'serverPort', 'networkLabel', 'attachedVolume', 'flavor', 'keypair', 'serverGroup', 'network', 'subnet', 'subnetPool', 'addressScope', 'port', 'securityGroup',
  'securityGroupRule', 'router', 'floatingIp', 'volume', 'snapshot', 'volumeAttachment', 'metadefNamespace', 'volumeMessage', 'volumeGroup', 'groupSnapshot', 'volumeBackup',
])

export function paramKind(path: string, param: string): string | undefined {
  const segments = path.split('/')
  const at = segments.indexOf(`{${param}}`)
  if (at <= 0) return undefined
  // A service's own meaning first (`volume:os-hosts/host` is a volume service; compute's os-hosts names a host).
  return PARAM_KINDS[`${segments[1]}:${segments[at - 1]}/${param}`] ?? PARAM_KINDS[`${segments[at - 1]}/${param}`]
}

/** Bytes of UTF-8 percent-encoded (lone surrogates become U+FFFD, as on any wire). */
export function pct(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('')
}

const RAW_ESCAPES = ['%ff', '%fe%ff', '%zz', '%', '%2', '%00', '%c0%af', '%ed%a0%80', '%e2%82']

const garbageText = fc.oneof(
  fc.constantFrom(...NASTY_STRINGS.filter((s) => s !== '')),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 24 }),
  fc.uuid(),
  fc.integer().map(String),
  fc.constantFrom('x'.repeat(1000), 'a,'.repeat(500)),
)

const garbageParam: fc.Arbitrary<ParamPlan> = fc.oneof(
  { arbitrary: garbageText.map((literal): ParamPlan => ({ literal })), weight: 4 },
  { arbitrary: fc.constantFrom(...RAW_ESCAPES).map((literal): ParamPlan => ({ literal, raw: true })), weight: 1 },
)

/** A path parameter: a fixture, the admin's or the member's own; in chaos mode sometimes garbage instead. */
function paramPlan(path: string, name: string, mode: Mode): fc.Arbitrary<ParamPlan> {
  const kind = paramKind(path, name)
  if (!kind) return garbageParam
  const fixtures = [
    { arbitrary: fc.constant<ParamPlan>({ fixture: kind, owner: 'admin' }), weight: 5 },
    { arbitrary: fc.constant<ParamPlan>({ fixture: kind, owner: 'member' }), weight: 2 },
  ]
  return mode === 'chaos' ? fc.oneof(...fixtures, { arbitrary: garbageParam, weight: 2 }) : fc.oneof(...fixtures)
}

const queryChaos: fc.Arbitrary<string> = fc.oneof(
  garbageText,
  // Comma lists of any length up to a thousand items and past it (a thousand tags was a 500).
  fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(1000, 2000)).map((n) => Array.from({ length: n }, () => 'a').join(',')),
  fc.constantFrom('', '-1', '0', '1e9', '99999999999999999999', '2147483648', 'true', 'none', 'None', 'asc', 'desc', 'id', 'in:a,b', 'eq:', 'a:b:c'),
)

type Pair = [string, string, boolean]

/**
 * Valid values the suite picks itself: a long poll's `wait` (up to 30 s) is kept short, since every case
 * would otherwise wait for nothing (waiting itself is the agents' tests' business).
 */
const CHOSEN_VALUES: Record<string, fc.Arbitrary<string>> = { wait: fc.constantFrom('0', '1') }

function queryPlan(params: OpenApiParameter[], mode: Mode): fc.Arbitrary<Pair[]> {
  const query = params.filter((p) => p.in === 'query')
  const valid = (p: OpenApiParameter) => (CHOSEN_VALUES[p.name] ?? valueFor(p.schema, { mode: 'valid' })).map((v): Pair[] => [[p.name, pct(String(v)), true]])
  // At most two documented parameters, so that a request with all of them valid is common.
  const validPairs = fc.shuffledSubarray(query, { maxLength: Math.min(2, query.length) }).chain((chosen) => fc.tuple(...chosen.map(valid)).map((lists) => lists.flat()))
  if (mode === 'valid') return validPairs
  // Chaos: the same with, half of the time (the body and headers are fuzzed too), one parameter gone wrong: a bad,
  // repeated or raw-escaped value of a documented one, or one it does not document. One, so that what it reaches
  // is more than the first check.
  const bad = (name: string) =>
    fc.oneof(
      { arbitrary: queryChaos.map((v): Pair[] => [[name, pct(v), true]]), weight: 3 },
      { arbitrary: fc.array(queryChaos, { minLength: 2, maxLength: 4 }).map((vs) => vs.map((v): Pair => [name, pct(v), true])), weight: 1 },
      { arbitrary: fc.constantFrom(...RAW_ESCAPES).map((v): Pair[] => [[name, v, true]]), weight: 1 },
    )
  const names = [...query.map((p) => p.name), 'unknown', 'all_tenants', 'limit', 'marker', 'fields', '', '%ff', 'a[b]', '__proto__']
  return fc.tuple(validPairs, fc.option(fc.constantFrom(...names).chain(bad), { freq: 2 })).map(([pairs, wrong]) => [...pairs, ...(wrong ?? [])])
}

/** Values of the microversion headers: in range, at the edges, past them, malformed. */
function versionValues(family: string, mode: Mode): fc.Arbitrary<string> {
  const [major, max] = family === 'compute' ? [2, 96] : [3, parseVersion(MAX_VOLUME_VERSION).minor]
  const valid = fc.oneof(fc.integer({ min: family === 'compute' ? 1 : 0, max }).map((minor) => `${family} ${major}.${minor}`), fc.constant(`${family} latest`))
  if (mode === 'valid') return valid
  const garbage = fc.constantFrom(
    `${family} ${major}.${max + 1}`,
    `${family} ${major + 1}.0`,
    `${family} 1.0`,
    `${family} ${major}.`,
    `${family} ${major}.1.1`,
    `${family} 0${major}.01`,
    `${family} -${major}.1`,
    `${family} 99999999999999999999.1`,
    `${family}`,
    `${family} `,
    `${family} abc`,
    '',
    'garbage',
    `${family} ${major}.1, ${family} ${major}.2`,
    `other 1.0`,
  )
  return fc.oneof({ arbitrary: valid, weight: 2 }, { arbitrary: garbage, weight: 3 })
}

const CONTENT_TYPES = ['application/json; charset=utf-8', 'text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'garbage', 'application/octet-stream']

/** Microversions as `x-microversions` gives them: { min: '2.1', max: '2.18' }. */
export interface VersionRange {
  min: string
  max: string
}

function headersPlan(params: OpenApiParameter[], mode: Mode, range?: VersionRange): fc.Arbitrary<Record<string, string>> {
  const headers = params.filter((p) => p.in === 'header')
  const parts = headers.map((p) => {
    const pattern = typeof p.schema?.pattern === 'string' ? p.schema.pattern : ''
    const family = /compute/.test(pattern + (p.schema?.description ?? '')) ? 'compute' : /volume/.test(pattern + (p.schema?.description ?? '')) ? 'volume' : undefined
    // A valid body of some microversions goes with a version among them.
    if (p.name === 'openstack-api-version' && family && range && mode === 'valid') return fc.constant([p.name, `${family} ${range.max}`] as const)
    if (p.name === 'x-openstack-nova-api-version' && range && mode === 'valid') return fc.constant(null)
    if (p.name === 'openstack-api-version' && family) return fc.option(versionValues(family, mode).map((v) => [p.name, v] as const), { freq: 3 })
    if (p.name === 'x-openstack-nova-api-version') return fc.option(versionValues('compute', mode).map((v) => [p.name, v.replace(/^compute ?/, '')] as const), { freq: 4 })
    return fc.option(fc.oneof(fc.stringMatching(/^[ -~]{0,40}$/), fc.constantFrom('', 'x'.repeat(4000))).map((v) => [p.name, v] as const), { freq: 3 })
  })
  return fc.tuple(...parts).map((pairs) => Object.fromEntries(pairs.filter((x) => x !== null)))
}

/** Bodies that are not the JSON they claim to be. */
const RAW_BODIES: fc.Arbitrary<BodyPlan> = fc.oneof(
  fc.constantFrom<BodyPlan>(
    { kind: 'bytes', base64: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]).toString('base64') },
    { kind: 'bytes', base64: Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]).toString('base64') },
    { kind: 'bytes', base64: Buffer.from([0xc0, 0xaf, 0xed, 0xa0, 0x80]).toString('base64') },
    { kind: 'text', text: '' },
    { kind: 'text', text: 'null' },
    { kind: 'text', text: '[]' },
    { kind: 'text', text: '"x"' },
    { kind: 'text', text: '1e400' },
    { kind: 'text', text: '{"a":' },
    { kind: 'text', text: '{"a":1,"a":2}' },
    { kind: 'text', text: '{"__proto__":{"polluted":true}}' },
    { kind: 'text', text: '{"constructor":{"prototype":{"polluted":true}}}' },
  ),
  fc.constantFrom(1000, 5000, 50_000).map((n): BodyPlan => ({ kind: 'text', text: '['.repeat(n) + ']'.repeat(n) })),
  fc.constantFrom(1000, 5000, 50_000).map((n): BodyPlan => ({ kind: 'text', text: '{"a":'.repeat(n) + '1' + '}'.repeat(n) })),
)

/**
 * A body with the microversions it was made for: of a schema whose alternatives each hold for some versions
 * (compute's bodies), one alternative and its range; otherwise no range.
 */
function versionedBody(op: Operation, schema: JsonSchema | undefined, mode: Mode, resolve: (ref: string) => JsonSchema | undefined): fc.Arbitrary<{ body: BodyPlan; range?: VersionRange }> {
  const variants = (schema?.anyOf ?? []) as JsonSchema[]
  if (mode === 'valid' && variants.length > 0 && variants.every((v) => v['x-microversions'])) {
    return fc.constantFrom(...variants).chain((variant) =>
      valueFor(variant, { mode, resolve }).map((value) => ({ body: { kind: 'json', value } as BodyPlan, range: variant['x-microversions'] as VersionRange })),
    )
  }
  return bodyPlan(op, schema, mode, resolve).map((body) => ({ body }))
}

function bodyPlan(op: Operation, schema: JsonSchema | undefined, mode: Mode, resolve: (ref: string) => JsonSchema | undefined): fc.Arbitrary<BodyPlan> {
  // No body on a GET or HEAD: nothing reads one, and Node closes such a connection without lingering, so a large
  // unread body can reset it under a large answer (a transport matter, not the service's).
  if (op.method === 'GET' || op.method === 'HEAD') return fc.constant<BodyPlan>({ kind: 'none' })
  const json = valueFor(schema, { mode, resolve }).map((value): BodyPlan => ({ kind: 'json', value }))
  if (mode === 'valid') return schema ? json : fc.constant<BodyPlan>({ kind: 'none' })
  return fc.oneof(
    { arbitrary: schema ? json : fc.constant<BodyPlan>({ kind: 'none' }), weight: 6 },
    { arbitrary: fc.constant<BodyPlan>({ kind: 'none' }), weight: 1 },
    { arbitrary: RAW_BODIES, weight: 2 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value): BodyPlan => ({ kind: 'json', value })), weight: 1 },
  )
}

/** Who sends a case and what kind of request it is (run.ts spreads an operation's cases over its lanes). */
export interface Lane {
  persona: PersonaName
  mode: Mode
}

export interface PlanOptions {
  doc: OpenApiDocument
  lane: Lane
}

export function planArbitrary(op: Operation, options: PlanOptions): fc.Arbitrary<Plan> {
  const resolve = (ref: string) => options.doc.components?.schemas?.[ref.replace('#/components/schemas/', '')]
  const params = op.operation.parameters ?? []
  const media = op.operation.requestBody?.content ?? {}
  const schema = Object.values(media)[0]?.schema
  const names = params.filter((p) => p.in === 'path').map((p) => p.name)
  const { persona, mode } = options.lane
  return versionedBody(op, schema, mode, resolve).chain(({ body, range }) =>
    fc
      .record({
        params: fc.record(Object.fromEntries(names.map((n) => [n, paramPlan(op.path, n, mode)]))) as fc.Arbitrary<Record<string, ParamPlan>>,
        query: queryPlan(params, mode),
        headers: headersPlan(params, mode, range),
        contentType: mode === 'chaos' ? fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 4 }) : fc.constant(null),
      })
      .map(({ contentType, ...plan }) => {
        const type = contentType ?? Object.keys(media)[0] ?? 'application/json'
        return { ...plan, persona, body, headers: body.kind === 'none' && contentType === null ? plan.headers : { ...plan.headers, 'content-type': type } }
      }),
  )
}

/** The value a fixture reference stands for in this world (a fresh uuid when the world has none of that kind). */
export function fixtureValue(world: World, ref: { fixture: string; owner: 'admin' | 'member' }): string {
  const own = ref.owner === 'member' ? world.memberOwned[ref.fixture] : undefined
  return own ?? world.fixtures[ref.fixture] ?? randomUUID()
}

function encodeBody(body: BodyPlan, contentType: string | undefined): Buffer | undefined {
  switch (body.kind) {
    case 'none':
      return undefined
    case 'text':
      return Buffer.from(body.text)
    case 'bytes':
      return Buffer.from(body.base64, 'base64')
    case 'json':
      if (contentType?.startsWith('application/x-www-form-urlencoded') && body.value && typeof body.value === 'object') {
        return Buffer.from(Object.entries(body.value as Record<string, unknown>).map(([k, v]) => `${pct(k)}=${pct(typeof v === 'string' ? v : JSON.stringify(v))}`).join('&'))
      }
      return Buffer.from(JSON.stringify(body.value) ?? 'null')
  }
}

export function materialize(world: World, base: string, op: Operation, plan: Plan, params: Record<string, ParamPlan> = plan.params): WireRequest {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const p = params[name]
    if (!p) return 'missing'
    if ('fixture' in p) return pct(fixtureValue(world, p))
    return p.raw ? p.literal : pct(p.literal)
  })
  const query = plan.query.map(([k, v]) => `${pct(k)}=${v}`).join('&')
  const headers = { ...world.personas[plan.persona].headers, ...plan.headers }
  return { method: op.method, url: `${base}${path}${query ? `?${query}` : ''}`, headers, body: encodeBody(plan.body, headers['content-type']) }
}
