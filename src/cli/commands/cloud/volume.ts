/**
 * Native volume commands (list, show, create, delete) with openstackclient 6.0's output. osc reads volumes
 * through cinderclient (block storage 3.0): a shown volume is the API's body with `metadata` as `properties`
 * and `volume_type` as `type`, lookups say "No volume with a name or ID of 'x' exists.", and the list names the
 * servers volumes are attached to.
 */
import type { Session } from '../../../client/session.js'
import { rich, type Cell } from '../../output/format.js'
import { UsageError } from '../../parse.js'
import type { CommandSpec } from '../../spec.js'
import {
  LIST_OUTPUT_FLAGS, LONG_FLAG, SHOW_OUTPUT_FLAGS, deleteEach, findResource, intFlag, keyValueFlag, oneOf, oscWording, printList, printShow, query, required, stringFlag,
  withSession,
} from './common.js'
import { findImage } from './image.js'
import { dictColumn, headers, plain, rows, type Column, type Formatter } from './osc.js'

type Attachment = { server_id: string; device: string }
type Volume = Record<string, unknown> & { id: string; name: string | null; attachments?: Attachment[] }

async function volumeApi(session: Session): Promise<string> {
  return session.endpoint(['volumev3', 'block-storage'])
}

/** osc's AttachmentsColumn: "Attached to <server name> on <device> " per attachment; json has the attachments. */
function attachmentsColumn(serverNames: Map<string, string>): Formatter {
  return (value) => {
    const attachments = (value ?? []) as Attachment[]
    return rich(attachments.map((a) => `Attached to ${serverNames.get(a.server_id) ?? a.server_id} on ${a.device} `).join(''), value ?? [])
  }
}

function listColumns(long: boolean, serverNames: Map<string, string>): Column<Volume>[] {
  const attached: Column<Volume> = { name: 'Attached to', from: 'attachments', format: attachmentsColumn(serverNames) }
  const start: Column<Volume>[] = [
    { name: 'ID', from: 'id' },
    { name: 'Name', from: 'name' },
    { name: 'Status', from: 'status' },
    { name: 'Size', from: 'size' },
  ]
  if (!long) return [...start, attached]
  return [...start, { name: 'Type', from: 'volume_type' }, { name: 'Bootable', from: 'bootable' }, attached, { name: 'Properties', from: 'metadata', format: dictColumn }]
}

/** How osc prints a volume: every key but `links`, `metadata` as `properties`, `volume_type` as `type`, sorted. */
function volumeFields(volume: Volume): [string, Cell][] {
  const renamed: Record<string, string> = { metadata: 'properties', volume_type: 'type' }
  return Object.keys(volume)
    .filter((key) => key !== 'links')
    .map((key): [string, Cell] => [renamed[key] ?? key, key === 'metadata' ? dictColumn(volume[key]) : plain(volume[key])])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** Names of the project's servers, for "Attached to" (osc shows ids of servers it cannot see). */
async function serverNames(session: Session, volumes: Volume[]): Promise<Map<string, string>> {
  const names = new Map<string, string>()
  if (!volumes.some((v) => v.attachments?.length)) return names
  try {
    const { servers } = await session.get<{ servers: { id: string; name: string }[] }>(`${await session.endpoint('compute')}/servers`)
    for (const s of servers) names.set(s.id, s.name)
  } catch {
    /* ids are shown instead, as osc does when the server list fails */
  }
  return names
}

/** Every volume of a list request, following Cinder's `volumes_links` next links. */
async function listVolumes(session: Session, filters: Record<string, string | number | undefined>): Promise<Volume[]> {
  const volumes: Volume[] = []
  for (let url: string | undefined = `${await volumeApi(session)}/volumes/detail${query(filters)}`; url; ) {
    const body: { volumes: Volume[]; volumes_links?: { rel: string; href: string }[] } = await session.get(url)
    volumes.push(...body.volumes)
    url = filters.limit === undefined ? body.volumes_links?.find((l) => l.rel === 'next')?.href : undefined
  }
  return volumes
}

export async function findVolume(session: Session, nameOrId: string): Promise<Volume> {
  const api = await volumeApi(session)
  return findResource<Volume>(session, {
    wording: oscWording('volume'),
    byId: (id) => `${api}/volumes/${id}`,
    one: (body) => (body as { volume: Volume }).volume,
    byName: (name) => `${api}/volumes/detail${query({ name })}`,
    many: (body) => (body as { volumes: Volume[] }).volumes,
  }, nameOrId)
}

export const volumeList: CommandSpec = {
  words: ['volume', 'list'],
  summary: 'list volumes',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'all-projects', type: 'boolean', help: 'include all projects (admin only)' },
    { name: 'name', type: 'string', help: 'filter results by volume name', placeholder: '<name>' },
    { name: 'status', type: 'string', help: 'filter results by status', placeholder: '<status>' },
    { name: 'limit', type: 'string', help: 'maximum number of volumes to display', placeholder: '<num-volumes>' },
    { name: 'marker', type: 'string', help: 'the last volume ID of the previous page', placeholder: '<volume>' },
  ],
  run: (context, flags) => {
    const limit = intFlag(flags, 'limit')
    if (limit !== undefined && limit < 0) throw new UsageError(`"--limit" should be greater or equal to 0: ${limit}`)
    const filters = {
      all_tenants: flags['all-projects'] ? 1 : undefined,
      name: stringFlag(flags, 'name'),
      status: stringFlag(flags, 'status'),
      limit,
      marker: stringFlag(flags, 'marker'),
    }
    return withSession(context, async (session) => {
      const volumes = await listVolumes(session, filters)
      const columns = listColumns(Boolean(flags.long), await serverNames(session, volumes))
      return printList(context, flags, headers(columns), rows(columns, volumes))
    })
  },
}

export const volumeShow: CommandSpec = {
  words: ['volume', 'show'],
  summary: 'display volume details',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['volume'],
  run: (context, flags, positionals) => {
    required(positionals, ['volume'])
    return withSession(context, async (session) => printShow(context, flags, volumeFields(await findVolume(session, positionals[0]))))
  },
}

export const volumeCreate: CommandSpec = {
  words: ['volume', 'create'],
  summary: 'create new volume',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'size', type: 'string', help: 'volume size in GB', placeholder: '<size>' },
    { name: 'type', type: 'string', help: 'set the type of volume', placeholder: '<volume-type>' },
    { name: 'image', type: 'string', help: 'use <image> as source of volume (name or ID)', placeholder: '<image>' },
    { name: 'description', type: 'string', help: 'volume description', placeholder: '<description>' },
    { name: 'availability-zone', type: 'string', help: 'create volume in <availability-zone>', placeholder: '<availability-zone>' },
    { name: 'property', type: 'string', repeatable: true, help: 'set a property to this volume (repeat for several)', placeholder: '<key=value>' },
    { name: 'bootable', type: 'boolean', help: 'mark volume as bootable' },
    { name: 'non-bootable', type: 'boolean', help: 'mark volume as non-bootable (default)' },
  ],
  positionals: ['name'],
  run: (context, flags, positionals) => {
    required(positionals, ['name'])
    const size = intFlag(flags, 'size')
    if (size === undefined) throw new UsageError('--size is a required option if snapshot or source volume is not specified.')
    const bootable = oneOf(flags, ['bootable', 'non-bootable'])
    const properties = keyValueFlag(flags, 'property')
    return withSession(context, async (session) => {
      const api = await volumeApi(session)
      const image = stringFlag(flags, 'image')
      const body = {
        size,
        name: positionals[0],
        description: stringFlag(flags, 'description'),
        volume_type: stringFlag(flags, 'type'),
        availability_zone: stringFlag(flags, 'availability-zone'),
        metadata: properties ?? {},
        imageRef: image ? (await findImage(session, image)).id : undefined,
      }
      const volume = (await session.send<{ volume: Volume }>('POST', `${api}/volumes`, { volume: body })).body.volume
      if (bootable) {
        // As osc: a refused flag is reported and the volume, which exists now, is still printed.
        await session
          .send('POST', `${api}/volumes/${encodeURIComponent(volume.id)}/action`, { 'os-set_bootable': { bootable: bootable === 'bootable' } })
          .catch((err: Error) => context.stderr.write(`Failed to set volume bootable property: ${err.message}\n`))
      }
      // osc prints the volume as the create answered it (status creating).
      return printShow(context, flags, volumeFields(volume))
    })
  },
}

export const volumeDelete: CommandSpec = {
  words: ['volume', 'delete'],
  summary: 'delete volume(s)',
  flags: [
    { name: 'force', type: 'boolean', help: 'attempt forced removal of volume(s), regardless of state' },
    { name: 'purge', type: 'boolean', help: 'remove any snapshots along with volume(s)' },
  ],
  positionals: ['volume'],
  variadic: true,
  run: (context, flags, positionals) => {
    required(positionals, ['volume'])
    const how = oneOf(flags, ['force', 'purge'])
    return withSession(context, async (session) => {
      const api = await volumeApi(session)
      return deleteEach(context, positionals, async (nameOrId) => {
        const volume = await findVolume(session, nameOrId)
        const url = `${api}/volumes/${encodeURIComponent(volume.id)}`
        if (how === 'force') await session.send('POST', `${url}/action`, { 'os-force_delete': {} })
        else await session.send('DELETE', `${url}${how === 'purge' ? '?cascade=True' : ''}`)
      }, {
        failed: (x, reason) => `Failed to delete volume with name or ID '${x}': ${reason}`,
        summary: (n, total) => `${n} of ${total} volumes failed to delete.`,
      })
    })
  },
}

export const VOLUME_COMMANDS: CommandSpec[] = [volumeList, volumeShow, volumeCreate, volumeDelete]
