/**
 * Native compute commands with openstackclient 6's columns: server list/show, flavor list, keypair list,
 * hypervisor list. They talk to the API directly (one process, no Python start-up), which is why they are fast.
 */
import type { Session } from '../../../client/session.js'
import type { CommandSpec } from '../../spec.js'
import { rich, type Cell } from '../../output/format.js'
import { LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, printList, printShow, query, withSession } from './common.js'

interface ServerDetail {
  id: string
  name: string
  status: string
  addresses: Record<string, { addr: string; version: number }[]>
  image: { id: string } | ''
  flavor: { id?: string; original_name?: string }
  metadata: Record<string, string>
  'OS-EXT-STS:task_state': string | null
  'OS-EXT-STS:power_state': number
  'OS-EXT-AZ:availability_zone': string
  'OS-EXT-SRV-ATTR:hypervisor_hostname'?: string | null
  [key: string]: unknown
}

const POWER_STATES = ['NOSTATE', 'Running', '', 'Paused', '', 'Shutdown', '', 'Crashed', 'Suspended']

/** "net1=10.0.0.5, fd00::5; net2=…" for people, {net: [addr]} for machines. */
export function networksCell(addresses: ServerDetail['addresses']): Cell {
  const machine = Object.fromEntries(Object.keys(addresses).sort().map((net) => [net, addresses[net].map((a) => a.addr)]))
  const human = Object.entries(machine)
    .map(([net, addrs]) => `${net}=${addrs.join(', ')}`)
    .join('; ')
  return rich(human, machine)
}

function propertiesCell(metadata: Record<string, string>): Cell {
  return rich(Object.entries(metadata).map(([k, v]) => `${k}='${v}'`).join(', '), metadata)
}

async function nameMaps(session: Session): Promise<{ images: Map<string, string>; flavors: Map<string, string> }> {
  const images = new Map<string, string>()
  const flavors = new Map<string, string>()
  // Lookups that fail leave ids in place, as openstackclient does.
  try {
    const image = await session.endpoint('image')
    const body = await session.get<{ images: { id: string; name: string }[] }>(`${image}/v2/images`)
    for (const i of body.images) images.set(i.id, i.name)
  } catch {
    /* ids shown instead */
  }
  try {
    const compute = await session.endpoint('compute')
    const body = await session.get<{ flavors: { id: string; name: string }[] }>(`${compute}/flavors/detail?is_public=None`)
    for (const f of body.flavors) flavors.set(f.id, f.name)
  } catch {
    /* ids shown instead */
  }
  return { images, flavors }
}

export const serverList: CommandSpec = {
  words: ['server', 'list'],
  summary: 'list servers',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    { name: 'long', type: 'boolean', help: 'list additional fields' },
    { name: 'name', type: 'string', help: 'regular expression to match names', placeholder: '<name-regex>' },
    { name: 'status', type: 'string', help: 'only servers with this status', placeholder: '<status>' },
    { name: 'limit', type: 'string', help: 'maximum number of servers', placeholder: '<num>' },
    { name: 'marker', type: 'string', help: 'the last server of the previous page (id)', placeholder: '<server>' },
    { name: 'all-projects', type: 'boolean', help: 'servers of all projects (admin)' },
  ],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const q = query({ name: flags.name as string, status: flags.status as string, limit: flags.limit as string, marker: flags.marker as string, all_tenants: flags['all-projects'] ? 'True' : undefined })
      const [{ servers }, names] = await Promise.all([session.get<{ servers: ServerDetail[] }>(`${compute}/servers/detail${q}`), nameMaps(session)])
      const imageId = (s: ServerDetail) => (s.image ? s.image.id : '')
      const imageName = (s: ServerDetail) => (s.image ? (names.images.get(s.image.id) ?? s.image.id) : 'N/A (booted from volume)')
      const flavorId = (s: ServerDetail) => s.flavor.id ?? ''
      const flavorName = (s: ServerDetail) => s.flavor.original_name ?? names.flavors.get(s.flavor.id ?? '') ?? s.flavor.id ?? ''
      if (!flags.long) {
        return printList(context, flags, ['ID', 'Name', 'Status', 'Networks', 'Image', 'Flavor'], servers.map((s) => [s.id, s.name, s.status, networksCell(s.addresses), imageName(s), flavorName(s)]))
      }
      return printList(
        context,
        flags,
        ['ID', 'Name', 'Status', 'Task State', 'Power State', 'Networks', 'Image Name', 'Image ID', 'Flavor Name', 'Flavor ID', 'Availability Zone', 'Host', 'Properties'],
        servers.map((s) => [
          s.id, s.name, s.status, s['OS-EXT-STS:task_state'], POWER_STATES[s['OS-EXT-STS:power_state']] ?? String(s['OS-EXT-STS:power_state']),
          networksCell(s.addresses), imageName(s), imageId(s), flavorName(s), flavorId(s), s['OS-EXT-AZ:availability_zone'],
          s['OS-EXT-SRV-ATTR:hypervisor_hostname'] ?? '', propertiesCell(s.metadata),
        ]),
      )
    }),
}

export const serverShow: CommandSpec = {
  words: ['server', 'show'],
  summary: 'show a server by name or id',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['server'],
  run: (context, flags, [nameOrId]) =>
    withSession(context, async (session) => {
      if (!nameOrId) throw new Error('give the server: pcctl server show <name-or-id>')
      const compute = await session.endpoint('compute')
      const server = await findServer(session, compute, nameOrId)
      const names = await nameMaps(session)
      const fields: [string, Cell][] = Object.keys(server)
        .filter((k) => !['links', 'addresses', 'image', 'flavor', 'metadata', 'security_groups'].includes(k))
        .map((k) => [k, typeof server[k] === 'object' && server[k] !== null ? rich(JSON.stringify(server[k]), server[k]) : (server[k] as Cell)])
      fields.push(['addresses', networksCell(server.addresses)])
      fields.push(['flavor', `${names.flavors.get(server.flavor.id ?? '') ?? server.flavor.original_name ?? ''} (${server.flavor.id ?? ''})`])
      fields.push(['image', server.image ? `${names.images.get(server.image.id) ?? ''} (${server.image.id})` : 'N/A (booted from volume)'])
      fields.push(['properties', propertiesCell(server.metadata)])
      fields.sort(([a], [b]) => a.localeCompare(b))
      return printShow(context, flags, fields)
    }),
}

/** By id first, then by exact name, as openstackclient finds resources. */
export async function findServer(session: Session, compute: string, nameOrId: string): Promise<ServerDetail> {
  try {
    return (await session.get<{ server: ServerDetail }>(`${compute}/servers/${encodeURIComponent(nameOrId)}`)).server
  } catch (err) {
    if ((err as { status?: number }).status !== 404) throw err
  }
  const { servers } = await session.get<{ servers: ServerDetail[] }>(`${compute}/servers/detail?name=${encodeURIComponent(`^${nameOrId}$`)}`)
  const exact = servers.filter((s) => s.name === nameOrId)
  if (exact.length === 0) throw new Error(`No server with a name or ID of '${nameOrId}' exists.`)
  if (exact.length > 1) throw new Error(`More than one server exists with the name '${nameOrId}'.`)
  return exact[0]
}

export const flavorList: CommandSpec = {
  words: ['flavor', 'list'],
  summary: 'list flavors',
  flags: [...LIST_OUTPUT_FLAGS, { name: 'all', type: 'boolean', help: 'public and private flavors' }],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const { flavors } = await session.get<{ flavors: { id: string; name: string; ram: number; disk: number; 'OS-FLV-EXT-DATA:ephemeral': number; vcpus: number; 'os-flavor-access:is_public': boolean }[] }>(
        `${compute}/flavors/detail?is_public=${flags.all ? 'None' : 'True'}`,
      )
      return printList(
        context,
        flags,
        ['ID', 'Name', 'RAM', 'Disk', 'Ephemeral', 'VCPUs', 'Is Public'],
        flavors.map((f) => [f.id, f.name, f.ram, f.disk, f['OS-FLV-EXT-DATA:ephemeral'], f.vcpus, f['os-flavor-access:is_public']]),
      )
    }),
}

export const keypairList: CommandSpec = {
  words: ['keypair', 'list'],
  summary: 'list key pairs',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const { keypairs } = await session.get<{ keypairs: { keypair: { name: string; fingerprint: string } }[] }>(`${compute}/os-keypairs`)
      return printList(context, flags, ['Name', 'Fingerprint'], keypairs.map(({ keypair: k }) => [k.name, k.fingerprint]))
    }),
}

export const hypervisorList: CommandSpec = {
  words: ['hypervisor', 'list'],
  summary: 'list hypervisors',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const compute = await session.endpoint('compute')
      const { hypervisors } = await session.get<{ hypervisors: { id: string | number; hypervisor_hostname: string; hypervisor_type: string; host_ip: string; state: string }[] }>(
        `${compute}/os-hypervisors/detail`,
      )
      return printList(context, flags, ['ID', 'Hypervisor Hostname', 'Hypervisor Type', 'Host IP', 'State'], hypervisors.map((h) => [h.id, h.hypervisor_hostname, h.hypervisor_type, h.host_ip, h.state]))
    }),
}
