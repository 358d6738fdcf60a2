/**
 * Native server commands with openstackclient 6.0's output: list, show, create, delete, set, reboot, start,
 * stop, resize (confirm, revert), console log; and hypervisor list. osc runs them through novaclient at compute
 * microversion 2.1 unless OS_COMPUTE_API_VERSION says otherwise, and so do these. A server is shown as osc's
 * _prep_server_detail prints it: the API's body with the image and flavor named, `metadata` as `properties`,
 * addresses as {network: [ip]} and the power state spelled out in tables.
 */
import { readFileSync } from 'node:fs'
import type { Session } from '../../../client/session.js'
import type { CliContext } from '../../context.js'
import { pyStr, rich, type Cell } from '../../output/format.js'
import { UsageError } from '../../parse.js'
import type { CommandSpec, FlagSpec, FlagValues } from '../../spec.js'
import { CliFailure } from '../config.js'
import {
  LIST_OUTPUT_FLAGS, LONG_FLAG, SHOW_OUTPUT_FLAGS, findNeutron, findResource, intFlag, keyValueFlag, listFlag, oneOf, oscWording, printList, printShow, query, required,
  stringFlag, waitUntil, waitUntilGone, withSession,
} from './common.js'
import { findFlavor } from './flavor.js'
import { findImage, listImages } from './image.js'
import { dictColumn, headers as columnHeaders, listColumn, listDictColumn, plain, rows, type Column, type Formatter } from './osc.js'

export type Server = Record<string, unknown> & {
  id: string
  name: string
  status: string
  progress?: number
  addresses?: Record<string, { addr: string }[]>
  image?: { id?: string } | ''
  flavor?: { id?: string; original_name?: string }
  fault?: { message?: string }
  'OS-EXT-STS:task_state'?: string | null
}

// ---------------------------------------------------------------------------------------------------------------
// microversions

/** "2.19" → [2, 19]; "latest" and "2.latest" are above everything. */
function versionParts(version: string): [number, number] {
  const [major, minor] = version.split('.')
  if (major === 'latest' || minor === 'latest') return [Infinity, Infinity]
  return [Number(major), Number(minor ?? 0)]
}

function atLeast(version: string, minimum: string): boolean {
  const [a, b] = versionParts(version)
  const [c, d] = versionParts(minimum)
  return a > c || (a === c && b >= d)
}

/**
 * The compute microversion of a request. novaclient speaks 2.1 unless OS_COMPUTE_API_VERSION is set; an option
 * that needs more gets the version it needs (where osc would refuse: "--os-compute-api-version 2.19 or greater
 * is required"), except when the user asked for a lower one, which is refused with osc's message.
 */
export function computeVersion(context: CliContext, needs: { version: string; option: string }[] = []): string {
  const asked = context.env.OS_COMPUTE_API_VERSION
  if (asked) {
    const missing = needs.find((n) => !atLeast(asked, n.version))
    if (missing) throw new UsageError(`--os-compute-api-version ${missing.version} or greater is required to support the ${missing.option} option`)
    return asked
  }
  return needs.reduce((highest, n) => (atLeast(n.version, highest) ? n.version : highest), '2.1')
}

function versionHeader(version: string): Record<string, string> {
  return { 'openstack-api-version': `compute ${version}` }
}

// ---------------------------------------------------------------------------------------------------------------
// columns

/** osc's PowerStateColumn: Nova's power state numbers spelled out in tables; json keeps the number. */
const POWER_STATES = ['NOSTATE', 'Running', '', 'Paused', 'Shutdown', '', 'Crashed', 'Suspended']
const powerStateColumn: Formatter = (value) => rich(typeof value === 'number' && value in POWER_STATES ? POWER_STATES[value] : 'N/A', value ?? null)

/** osc_lib's DictListColumn (format_dict_of_list): "net1=10.0.0.5, fd00::5; net2=…", keys and values sorted. */
export const dictListColumn: Formatter = (value) => {
  const dict = (value ?? {}) as Record<string, string[]>
  const human = Object.keys(dict)
    .sort()
    .filter((k) => dict[k] !== null)
    .map((k) => `${k}=${[...dict[k]].sort().join(', ')}`)
    .join('; ')
  return rich(human, dict)
}

/** novaclient's Server.networks: the addresses by network label. */
function networks(server: Server): Record<string, string[]> {
  return Object.fromEntries(Object.entries(server.addresses ?? {}).map(([label, addresses]) => [label, addresses.map((a) => a.addr)]))
}

const IMAGE_FOR_BOOT_FROM_VOLUME = 'N/A (booted from volume)'

/** A server of the list with the names osc adds (`image_name` …); osc leaves out what its lookups did not find. */
type ListedServer = Server & { networks: Record<string, string[]>; image_name?: string; image_id?: string; flavor_name?: string; flavor_id?: string }

function listColumns(long: boolean, embeddedFlavor: boolean, noNameLookup: boolean): Column<ListedServer>[] {
  const networksColumn: Column<ListedServer> = { name: 'Networks', from: 'networks', format: dictListColumn }
  const start: Column<ListedServer>[] = [
    { name: 'ID', from: 'id' },
    { name: 'Name', from: 'name' },
    { name: 'Status', from: 'status' },
  ]
  // From 2.47 the server embeds its flavor without an id: osc shows the flavor's original name only.
  const flavor: Column<ListedServer>[] = embeddedFlavor
    ? [{ name: 'Flavor', from: 'flavor_name', missing: '' }]
    : long
      ? [{ name: 'Flavor Name', from: 'flavor_name', missing: '' }, { name: 'Flavor ID', from: 'flavor_id', missing: '' }]
      : [{ name: 'Flavor', from: noNameLookup ? 'flavor_id' : 'flavor_name', missing: '' }]
  if (!long) return [...start, networksColumn, { name: 'Image', from: noNameLookup ? 'image_id' : 'image_name', missing: '' }, ...flavor]
  return [
    ...start,
    { name: 'Task State', from: 'OS-EXT-STS:task_state', missing: '' },
    { name: 'Power State', from: 'OS-EXT-STS:power_state', format: powerStateColumn },
    networksColumn,
    { name: 'Image Name', from: 'image_name', missing: '' },
    { name: 'Image ID', from: 'image_id', missing: '' },
    ...flavor,
    { name: 'Availability Zone', from: 'OS-EXT-AZ:availability_zone', missing: '' },
    { name: 'Host', from: 'OS-EXT-SRV-ATTR:host', missing: '' },
    { name: 'Properties', from: 'metadata', format: dictColumn },
  ]
}

/** How osc's _prep_server_detail prints the keys of a server body: renamed, formatted, or left out. */
const SHOW_KEYS: Record<string, { name?: string; format?: Formatter; hidden?: true }> = {
  links: { hidden: true },
  metadata: { name: 'properties', format: dictColumn },
  tenant_id: { name: 'project_id' },
  'os-extended-volumes:volumes_attached': { name: 'volumes_attached', format: listDictColumn },
  security_groups: { format: listDictColumn },
  tags: { format: listColumn },
  'OS-EXT-STS:power_state': { format: powerStateColumn },
}

/** "cirros (id)", the id alone when the image cannot be read, or osc's words for a server booted from a volume. */
async function imageText(session: Session, image: Server['image']): Promise<string> {
  if (!image || !image.id) return IMAGE_FOR_BOOT_FROM_VOLUME
  try {
    return `${pyStr((await findImageById(session, image.id)).name)} (${image.id})`
  } catch {
    return image.id
  }
}

async function findImageById(session: Session, id: string): Promise<{ name: unknown }> {
  return session.get<{ name: unknown }>(`${await session.endpoint('image')}/v2/images/${encodeURIComponent(id)}`)
}

/** "m1.tiny (1)", the id alone when the flavor cannot be read; from 2.47 the embedded flavor as a dict. */
async function flavorCell(session: Session, compute: string, flavor: Server['flavor']): Promise<Cell> {
  if (!flavor || !('id' in flavor)) return dictColumn(flavor ?? {})
  try {
    const { flavor: found } = await session.get<{ flavor: { name: string } }>(`${compute}/flavors/${encodeURIComponent(String(flavor.id))}`)
    return `${found.name} (${flavor.id})`
  } catch {
    return String(flavor.id)
  }
}

/** The fields of `openstack server show`, sorted by name as osc prints them. */
export async function serverFields(session: Session, compute: string, server: Server): Promise<[string, Cell][]> {
  const out: [string, Cell][] = [
    ['image', await imageText(session, server.image)],
    ['flavor', await flavorCell(session, compute, server.flavor)],
    ['addresses', dictListColumn(networks(server))],
  ]
  for (const [key, value] of Object.entries(server)) {
    if (key === 'image' || key === 'flavor' || key === 'addresses') continue
    const rule = SHOW_KEYS[key] ?? {}
    if (rule.hidden) continue
    out.push([rule.name ?? key, (rule.format ?? plain)(value)])
  }
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

// ---------------------------------------------------------------------------------------------------------------
// finding servers

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** By id first, then by exact name (the API's name filter is a regular expression), as osc_lib's find_resource. */
export async function findServer(session: Session, compute: string, nameOrId: string, headers: Record<string, string> = {}): Promise<Server> {
  return findResource<Server>(session, {
    wording: oscWording('server'),
    byId: (id) => `${compute}/servers/${id}`,
    one: (body) => (body as { server: Server }).server,
    byName: (name) => `${compute}/servers/detail${query({ name: `^${escapeRegex(name)}$` })}`,
    many: (body) => (body as { servers: Server[] }).servers,
    headers,
  }, nameOrId)
}

async function getServer(session: Session, compute: string, id: string, headers: Record<string, string>): Promise<Server> {
  return (await session.get<{ server: Server }>(`${compute}/servers/${encodeURIComponent(id)}`, headers)).server
}

async function action(session: Session, compute: string, id: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  return (await session.send('POST', `${compute}/servers/${encodeURIComponent(id)}/action`, body, headers)).body
}

/** Waits until the server is in one of `success` (and no task is running on it); ERROR ends the wait with `failure`. */
function untilStatus(context: CliContext, session: Session, compute: string, id: string, headers: Record<string, string>, success: string[], failure: string): Promise<Server> {
  return waitUntil(context, () => getServer(session, compute, id, headers), (s) => {
    if (s.status === 'ERROR') return `${failure}${s.fault?.message ? `: ${s.fault.message}` : ''}`
    return success.includes(s.status) && !s['OS-EXT-STS:task_state']
  })
}

// ---------------------------------------------------------------------------------------------------------------
// commands

const WAIT_FLAG = (what: string): FlagSpec => ({ name: 'wait', type: 'boolean', help: `wait for ${what} to complete` })

export const serverList: CommandSpec = {
  words: ['server', 'list'],
  summary: 'list servers',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'name', type: 'string', help: 'regular expression to match names', placeholder: '<name-regex>' },
    { name: 'status', type: 'string', help: 'only servers with this status', placeholder: '<status>' },
    { name: 'limit', type: 'string', help: 'maximum number of servers', placeholder: '<num-servers>' },
    { name: 'marker', type: 'string', help: 'the last server of the previous page (name or ID)', placeholder: '<server>' },
    { name: 'all-projects', type: 'boolean', help: 'include all projects (admin only)' },
    { name: 'no-name-lookup', type: 'boolean', help: 'skip flavor and image name lookup' },
  ],
  run: (context, flags) => {
    const version = computeVersion(context)
    const limit = intFlag(flags, 'limit')
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const headers = versionHeader(version)
      const marker = stringFlag(flags, 'marker')
      const q = query({
        name: stringFlag(flags, 'name'),
        status: stringFlag(flags, 'status'),
        all_tenants: flags['all-projects'] ? 'True' : undefined,
        limit,
        marker: marker ? (await findServer(session, compute, marker, headers)).id : undefined,
      })
      // The image and flavor names are read while the servers are: one round trip instead of two.
      const names = flags['no-name-lookup'] ? Promise.resolve(undefined) : nameMaps(session, compute)
      const { servers } = await session.get<{ servers: Server[] }>(`${compute}/servers/detail${q}`, headers)
      const listed = withNames(servers, await names)
      const columns = listColumns(Boolean(flags.long), atLeast(version, '2.47'), Boolean(flags['no-name-lookup']))
      return printList(context, flags, columnHeaders(columns), rows(columns, listed))
    })
  },
}

interface NameMaps {
  images: Map<string, string>
  flavors: Map<string, string>
}

/** Image and flavor names from one list of each; names are not crucial, so osc swallows a failed lookup. */
async function nameMaps(session: Session, compute: string): Promise<NameMaps> {
  const [images, flavors] = await Promise.all([
    listImages(session).catch(() => []),
    session.get<{ flavors: { id: string; name: string }[] }>(`${compute}/flavors/detail?is_public=None`).then((b) => b.flavors, () => []),
  ])
  return { images: new Map(images.map((i) => [i.id, String(i.name)])), flavors: new Map(flavors.map((f) => [f.id, f.name])) }
}

/** Adds what osc's list shows: networks, and the image and flavor names (left out when a lookup did not find them). */
function withNames(servers: Server[], names: NameMaps | undefined): ListedServer[] {
  return servers.map((s) => {
    const listed: ListedServer = { ...s, networks: networks(s) }
    if (s.image && s.image.id) {
      if (names?.images.has(s.image.id)) listed.image_name = names.images.get(s.image.id)
      listed.image_id = s.image.id
    } else {
      listed.image_name = listed.image_id = IMAGE_FOR_BOOT_FROM_VOLUME
    }
    if (s.flavor && 'id' in s.flavor) {
      if (names?.flavors.has(String(s.flavor.id))) listed.flavor_name = names.flavors.get(String(s.flavor.id))
      listed.flavor_id = s.flavor.id
    } else {
      listed.flavor_name = s.flavor?.original_name
    }
    return listed
  })
}

export const serverShow: CommandSpec = {
  words: ['server', 'show'],
  summary: 'show server details',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['server'],
  run: (context, flags, positionals) => {
    required(positionals, ['server'])
    const headers = versionHeader(computeVersion(context))
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const server = await findServer(session, compute, positionals[0], headers)
      return printShow(context, flags, await serverFields(session, compute, server))
    })
  },
}

type Nic = Record<'net-id' | 'port-id' | 'v4-fixed-ip' | 'v6-fixed-ip' | 'tag', string>
const NIC_FORM = "'net-id=net-uuid,port-id=port-uuid,v4-fixed-ip=ip-addr,v6-fixed-ip=ip-addr,tag=tag'"

/** One --nic value as osc's NICAction reads it (`key` for --network/--port, which take a bare name). */
function parseNic(value: string, key?: 'net-id' | 'port-id'): Nic | 'auto' | 'none' {
  if (value === 'auto' || value === 'none') return value
  if (key && (value.includes(',') || value.includes('='))) throw new UsageError(`Invalid argument ${value}; characters ',' and '=' are not allowed`)
  const text = key ? `${key}=${value}` : value
  const nic: Nic = { 'net-id': '', 'port-id': '', 'v4-fixed-ip': '', 'v6-fixed-ip': '', tag: '' }
  for (const part of text.split(',')) {
    const eq = part.indexOf('=')
    const k = part.slice(0, eq < 0 ? part.length : eq)
    const v = eq < 0 ? '' : part.slice(eq + 1)
    if (!(k in nic) || !v) throw new UsageError(`Invalid argument ${text}; argument must be of form ${NIC_FORM}`)
    nic[k as keyof Nic] = v
  }
  if (nic['net-id'] && nic['port-id']) throw new UsageError(`Invalid argument ${text}; either network or port should be specified but not both`)
  if (nic['v4-fixed-ip'] && nic['v6-fixed-ip']) throw new UsageError("Only one of 'v4-fixed-ip' and 'v6-fixed-ip' may be provided.")
  return nic
}

/** The NICs of --nic, --network and --port (in that order: the flags are read one name at a time). */
function parseNics(flags: FlagValues): (Nic | 'auto' | 'none')[] {
  const nics = [...listFlag(flags, 'nic').map((v) => parseNic(v)), ...listFlag(flags, 'network').map((v) => parseNic(v, 'net-id')), ...listFlag(flags, 'port').map((v) => parseNic(v, 'port-id'))]
  if (nics.some((n) => n === 'auto' || n === 'none') && nics.length > 1) {
    throw new UsageError('Specifying a --nic of auto or none cannot be used with any other --nic, --network or --port value.')
  }
  return nics
}

/** The `networks` of the create request, names resolved to ids as osc resolves them through the network API. */
async function networksBody(session: Session, nics: (Nic | 'auto' | 'none')[], version: string): Promise<unknown> {
  if (nics.length === 1 && typeof nics[0] === 'string') return nics[0]
  // Without any NIC, 2.37 and later need a word: osc sends 'auto'; before 2.37 an empty list lets Nova decide.
  if (nics.length === 0) return atLeast(version, '2.37') ? 'auto' : []
  const out: Record<string, string>[] = []
  for (const nic of nics as Nic[]) {
    const entry: Record<string, string> = {}
    if (nic['net-id']) entry.uuid = (await findNeutron(session, 'networks', 'network', 'Network', nic['net-id'])).id
    if (nic['v4-fixed-ip'] || nic['v6-fixed-ip']) entry.fixed_ip = nic['v4-fixed-ip'] || nic['v6-fixed-ip']
    if (nic['port-id']) entry.port = (await findNeutron(session, 'ports', 'port', 'Port', nic['port-id'])).id
    if (nic.tag) entry.tag = nic.tag
    out.push(entry)
  }
  return out
}

function readUserData(file: string): string {
  try {
    return readFileSync(file).toString('base64')
  } catch (err) {
    throw new CliFailure(`Can't open '${file}': ${(err as Error).message}`)
  }
}

export const serverCreate: CommandSpec = {
  words: ['server', 'create'],
  summary: 'create a new server',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'image', type: 'string', help: 'create server boot disk from this image (name or ID)', placeholder: '<image>' },
    { name: 'flavor', type: 'string', help: 'create server with this flavor (name or ID)', placeholder: '<flavor>' },
    { name: 'nic', type: 'string', repeatable: true, help: `a NIC: none, auto, or ${NIC_FORM} (repeat for several)`, placeholder: '<nic>' },
    { name: 'network', type: 'string', repeatable: true, help: 'a NIC on this network (name or ID); same as --nic net-id=<network>', placeholder: '<network>' },
    { name: 'port', type: 'string', repeatable: true, help: 'a NIC on this port (name or ID); same as --nic port-id=<port>', placeholder: '<port>' },
    { name: 'key-name', type: 'string', help: 'keypair to inject into this server', placeholder: '<key-name>' },
    { name: 'property', type: 'string', repeatable: true, help: 'set a property on this server (repeat for several)', placeholder: '<key=value>' },
    { name: 'security-group', type: 'string', repeatable: true, help: 'security group to assign to this server (name or ID, repeat for several)', placeholder: '<security-group>' },
    { name: 'availability-zone', type: 'string', help: 'availability zone: <zone>[:<host>[:<node>]]', placeholder: '<zone-name>' },
    { name: 'user-data', type: 'string', help: 'user data file to serve from the metadata server', placeholder: '<user-data>' },
    { name: 'description', type: 'string', help: 'description for the server (microversion 2.19)', placeholder: '<description>' },
    { name: 'tag', type: 'string', repeatable: true, help: 'tag for the server (microversion 2.52, repeat for several)', placeholder: '<tag>' },
    { name: 'password', type: 'string', help: 'set the password of this server', placeholder: '<password>' },
    WAIT_FLAG('build'),
  ],
  positionals: ['server-name'],
  run: (context, flags, positionals) => {
    required(positionals, ['server-name'])
    const imageName = stringFlag(flags, 'image')
    const flavorName = stringFlag(flags, 'flavor')
    if (!flavorName) throw new UsageError('the following arguments are required: --flavor')
    if (!imageName) throw new UsageError('the following arguments are required: --image')
    const nics = parseNics(flags)
    const tags = listFlag(flags, 'tag')
    const needs = [
      ...(nics.some((n) => typeof n === 'string') ? [{ version: '2.37', option: '--nic auto/none' }] : []),
      ...(flags.description !== undefined ? [{ version: '2.19', option: '--description' }] : []),
      ...(tags.length ? [{ version: '2.52', option: '--tag' }] : []),
    ]
    const version = computeVersion(context, needs)
    const userData = flags['user-data'] !== undefined ? readUserData(stringFlag(flags, 'user-data')!) : undefined
    const properties = keyValueFlag(flags, 'property')
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const headers = versionHeader(version)
      const [image, flavor] = await Promise.all([findImage(session, imageName), findFlavor(session, flavorName, oscWording('flavor'))])
      const securityGroups = await Promise.all(listFlag(flags, 'security-group').map((sg) => findNeutron(session, 'security-groups', 'security_group', 'SecurityGroup', sg)))
      const body = {
        name: positionals[0],
        imageRef: image.id,
        flavorRef: flavor.id,
        min_count: 1,
        max_count: 1,
        networks: await networksBody(session, nics, version),
        // osc sends the groups' ids, so two groups of the same name cannot be confused.
        ...(securityGroups.length ? { security_groups: securityGroups.map((sg) => ({ name: sg.id })) } : {}),
        ...(properties ? { metadata: properties } : {}),
        ...(userData !== undefined ? { user_data: userData } : {}),
        key_name: stringFlag(flags, 'key-name'),
        availability_zone: stringFlag(flags, 'availability-zone'),
        description: stringFlag(flags, 'description'),
        adminPass: stringFlag(flags, 'password'),
        ...(tags.length ? { tags } : {}),
      }
      const created = (await session.send<{ server: Server }>('POST', `${compute}/servers`, { server: body }, headers)).body.server
      const shown = versionHeader(computeVersion(context))
      if (flags.wait) await untilStatus(context, session, compute, created.id, shown, ['ACTIVE'], `Error creating server: ${positionals[0]}`)
      // osc prints the create answer (adminPass …) updated with the server as it is now.
      const server = { ...created, ...(await getServer(session, compute, created.id, shown)) }
      return printShow(context, flags, await serverFields(session, compute, server))
    })
  },
}

/**
 * Whether a delete being waited for failed. A server in ERROR before the delete stays ERROR while it is deleted
 * (task state `deleting`), so ERROR alone is no failure: the delete failed when the server is ERROR with no task
 * and it either was not ERROR before or has a new fault (the conductor records one when the host refuses).
 */
function deleteFailed(before: Server, now: Server): boolean {
  if (now.status !== 'ERROR' || now['OS-EXT-STS:task_state']) return false
  return before.status !== 'ERROR' || JSON.stringify(now.fault ?? null) !== JSON.stringify(before.fault ?? null)
}

export const serverDelete: CommandSpec = {
  words: ['server', 'delete'],
  summary: 'delete server(s)',
  flags: [{ name: 'force', type: 'boolean', help: 'force delete server(s)' }, WAIT_FLAG('delete')],
  positionals: ['server'],
  variadic: true,
  run: (context, flags, positionals) => {
    required(positionals, ['server'])
    const headers = versionHeader(computeVersion(context))
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      // As osc: the first server that cannot be found or deleted ends the command.
      for (const nameOrId of positionals) {
        const server = await findServer(session, compute, nameOrId, headers)
        if (flags.force) await action(session, compute, server.id, { forceDelete: null }, headers)
        else await session.send('DELETE', `${compute}/servers/${encodeURIComponent(server.id)}`, undefined, headers)
        if (flags.wait) await waitUntilGone(context, () => getServer(session, compute, server.id, headers), (s) => (deleteFailed(server, s) ? `Error deleting server: ${server.id}` : undefined))
      }
      return 0
    })
  },
}

export const serverSet: CommandSpec = {
  words: ['server', 'set'],
  summary: 'set server properties',
  flags: [
    { name: 'name', type: 'string', help: 'new server name', placeholder: '<new-name>' },
    { name: 'property', type: 'string', repeatable: true, help: 'property to add/change for this server (repeat for several)', placeholder: '<key=value>' },
    { name: 'description', type: 'string', help: 'new server description (microversion 2.19)', placeholder: '<description>' },
    { name: 'tag', type: 'string', repeatable: true, help: 'tag for the server (microversion 2.26, repeat for several)', placeholder: '<tag>' },
  ],
  positionals: ['server'],
  run: (context, flags, positionals) => {
    required(positionals, ['server'])
    const properties = keyValueFlag(flags, 'property')
    const tags = listFlag(flags, 'tag')
    const description = stringFlag(flags, 'description')
    const name = stringFlag(flags, 'name')
    const updateVersion = computeVersion(context, description ? [{ version: '2.19', option: '--description' }] : [])
    const tagVersion = computeVersion(context, tags.length ? [{ version: '2.26', option: '--tag' }] : [])
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const server = await findServer(session, compute, positionals[0], versionHeader(computeVersion(context)))
      const url = `${compute}/servers/${encodeURIComponent(server.id)}`
      // osc's order: the update (name, description), then the properties, then the tags.
      if (name || description) await session.send('PUT', url, { server: { ...(name ? { name } : {}), ...(description ? { description } : {}) } }, versionHeader(updateVersion))
      if (properties) await session.send('POST', `${url}/metadata`, { metadata: properties })
      for (const tag of tags) await session.send('PUT', `${url}/tags/${encodeURIComponent(tag)}`, undefined, versionHeader(tagVersion))
      return 0
    })
  },
}

export const serverReboot: CommandSpec = {
  words: ['server', 'reboot'],
  summary: 'perform a hard or soft server reboot',
  flags: [{ name: 'hard', type: 'boolean', help: 'perform a hard reboot' }, { name: 'soft', type: 'boolean', help: 'perform a soft reboot (default)' }, WAIT_FLAG('reboot')],
  positionals: ['server'],
  run: (context, flags, positionals) => {
    required(positionals, ['server'])
    const type = oneOf(flags, ['hard', 'soft']) === 'hard' ? 'HARD' : 'SOFT'
    const headers = versionHeader(computeVersion(context))
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const server = await findServer(session, compute, positionals[0], headers)
      await action(session, compute, server.id, { reboot: { type } }, headers)
      if (flags.wait) {
        await untilStatus(context, session, compute, server.id, headers, ['ACTIVE'], `Error rebooting server: ${server.id}`)
        context.stdout.write('Complete\n')
      }
      return 0
    })
  },
}

/** start and stop: an action on each server in turn, as osc does (no waiting). */
function powerCommand(verb: 'start' | 'stop', actionName: 'os-start' | 'os-stop'): CommandSpec {
  return {
    words: ['server', verb],
    summary: `${verb} server(s)`,
    flags: [],
    positionals: ['server'],
    variadic: true,
    run: (context, _flags, positionals) => {
      required(positionals, ['server'])
      const headers = versionHeader(computeVersion(context))
      return withSession(context, async (session) => {
        const compute = await session.endpoint('compute')
        for (const nameOrId of positionals) {
          const server = await findServer(session, compute, nameOrId, headers)
          await action(session, compute, server.id, { [actionName]: null }, headers)
        }
        return 0
      })
    },
  }
}

export const serverStart = powerCommand('start', 'os-start')
export const serverStop = powerCommand('stop', 'os-stop')

export const serverResize: CommandSpec = {
  words: ['server', 'resize'],
  summary: 'scale server to a new flavor (then confirm or revert it)',
  flags: [{ name: 'flavor', type: 'string', help: 'resize server to specified flavor', placeholder: '<flavor>' }, WAIT_FLAG('resize')],
  positionals: ['server'],
  run: (context, flags, positionals) => {
    required(positionals, ['server'])
    const flavorName = stringFlag(flags, 'flavor')
    if (!flavorName) throw new UsageError('the following arguments are required: --flavor (or use `server resize confirm|revert <server>`)')
    const headers = versionHeader(computeVersion(context))
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const server = await findServer(session, compute, positionals[0], headers)
      const flavor = await findFlavor(session, flavorName, oscWording('flavor'))
      await action(session, compute, server.id, { resize: { flavorRef: flavor.id } }, headers)
      if (flags.wait) {
        await untilStatus(context, session, compute, server.id, headers, ['ACTIVE', 'VERIFY_RESIZE'], `Error resizing server: ${server.id}`)
        context.stdout.write('Complete\n')
      }
      return 0
    })
  },
}

function resizeStep(verb: 'confirm' | 'revert', actionName: 'confirmResize' | 'revertResize', summary: string): CommandSpec {
  return {
    words: ['server', 'resize', verb],
    summary,
    flags: [],
    positionals: ['server'],
    run: (context, _flags, positionals) => {
      required(positionals, ['server'])
      const headers = versionHeader(computeVersion(context))
      return withSession(context, async (session) => {
        const compute = await session.endpoint('compute')
        const server = await findServer(session, compute, positionals[0], headers)
        await action(session, compute, server.id, { [actionName]: null }, headers)
        return 0
      })
    },
  }
}

export const serverResizeConfirm = resizeStep('confirm', 'confirmResize', 'confirm server resize and release the old server')
export const serverResizeRevert = resizeStep('revert', 'revertResize', 'revert server resize and restart the old server')

/** `openstack console log show`; `server console log` is the same command under the name the issue gave it. */
function consoleLog(words: string[]): CommandSpec {
  return {
    words,
    summary: "show server's console output",
    flags: [{ name: 'lines', type: 'string', help: 'number of lines to display from the end of the log (default=all)', placeholder: '<num-lines>' }],
    positionals: ['server'],
    run: (context, flags, positionals) => {
      required(positionals, ['server'])
      const lines = intFlag(flags, 'lines')
      if (lines !== undefined && lines < 0) throw new UsageError(`"--lines" should be greater or equal to 0: ${lines}`)
      const headers = versionHeader(computeVersion(context))
      return withSession(context, async (session) => {
        const compute = await session.endpoint('compute')
        const server = await findServer(session, compute, positionals[0], headers)
        const body = (await action(session, compute, server.id, { 'os-getConsoleOutput': lines === undefined ? {} : { length: lines } }, headers)) as { output?: string } | undefined
        const output = body?.output ?? ''
        context.stdout.write(output && !output.endsWith('\n') ? `${output}\n` : output)
        return 0
      })
    },
  }
}

export const consoleLogShow = consoleLog(['console', 'log', 'show'])
export const serverConsoleLog = consoleLog(['server', 'console', 'log'])

// ---------------------------------------------------------------------------------------------------------------
// hypervisors

/** novaclient's resources answer '' for an attribute the API did not send (a search answer has no details). */
type Hypervisor = Record<string, unknown>

const HYPERVISOR_COLUMNS: Column<Hypervisor>[] = [
  { name: 'ID', from: 'id', missing: '' },
  { name: 'Hypervisor Hostname', from: 'hypervisor_hostname', missing: '' },
  { name: 'Hypervisor Type', from: 'hypervisor_type', missing: '' },
  { name: 'Host IP', from: 'host_ip', missing: '' },
  { name: 'State', from: 'state', missing: '' },
]
const HYPERVISOR_LONG_COLUMNS: Column<Hypervisor>[] = [
  ...HYPERVISOR_COLUMNS,
  { name: 'vCPUs Used', from: 'vcpus_used', missing: '' },
  { name: 'vCPUs', from: 'vcpus', missing: '' },
  { name: 'Memory MB Used', from: 'memory_mb_used', missing: '' },
  { name: 'Memory MB', from: 'memory_mb', missing: '' },
]

export const hypervisorList: CommandSpec = {
  words: ['hypervisor', 'list'],
  summary: 'list hypervisors',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'matching', type: 'string', help: 'filter hypervisors using <hostname> substring', placeholder: '<hostname>' },
  ],
  run: (context, flags) => {
    const headers = versionHeader(computeVersion(context))
    return withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const matching = stringFlag(flags, 'matching')
      // novaclient's search: the hypervisors whose hostname contains the text (no details in that answer).
      const url = matching ? `${compute}/os-hypervisors/${encodeURIComponent(matching)}/search` : `${compute}/os-hypervisors/detail`
      const { hypervisors } = await session.get<{ hypervisors: Hypervisor[] }>(url, headers)
      const columns = flags.long ? HYPERVISOR_LONG_COLUMNS : HYPERVISOR_COLUMNS
      return printList(context, flags, columnHeaders(columns), rows(columns, hypervisors))
    })
  },
}

export const COMPUTE_COMMANDS: CommandSpec[] = [
  serverList, serverShow, serverCreate, serverDelete, serverSet, serverReboot, serverStart, serverStop, serverResize, serverResizeConfirm, serverResizeRevert,
  consoleLogShow, serverConsoleLog, hypervisorList,
]
