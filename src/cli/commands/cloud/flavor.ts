/**
 * Native flavor commands (list, show, create, delete) with openstackclient 6.0's columns and fields. osc reads
 * flavors through openstacksdk at compute microversion 2.61 (extra specs in the body), names the fields as
 * osc did before the SDK (`properties`, `OS-FLV-EXT-DATA:ephemeral` …) and says "No Flavor found for x".
 */
import type { Session } from '../../../client/session.js'
import { pyFloat } from '../../output/format.js'
import { UsageError } from '../../parse.js'
import type { CommandSpec } from '../../spec.js'
import {
  LIST_OUTPUT_FLAGS, LONG_FLAG, SHOW_OUTPUT_FLAGS, deleteEach, findResource, intFlag, keyValueFlag, oneOf, printList, printShow, query, required, sdkWording,
  stringFlag, withSession, type Wording,
} from './common.js'
import { dictColumn, fields, headers, plain, rows, type Column, type Formatter } from './osc.js'

type Flavor = Record<string, unknown> & { id: string; name: string }
type Link = { rel: string; href: string }

/** openstacksdk's Flavor resource speaks 2.61; so do these commands. */
const FLAVOR_VERSION = { 'openstack-api-version': 'compute 2.61' }

/** The SDK types rxtx_factor as a float: 1.0 in every text format, as osc prints it. */
const floatColumn: Formatter = (value) => (typeof value === 'number' ? pyFloat(value) : plain(value))

const LIST_COLUMNS: Column<Flavor>[] = [
  { name: 'ID', from: 'id' },
  { name: 'Name', from: 'name' },
  { name: 'RAM', from: 'ram', missing: 0 },
  { name: 'Disk', from: 'disk', missing: 0 },
  { name: 'Ephemeral', from: 'OS-FLV-EXT-DATA:ephemeral', missing: 0 },
  { name: 'VCPUs', from: 'vcpus', missing: 0 },
  { name: 'Is Public', from: 'os-flavor-access:is_public', missing: true },
]
const LONG_COLUMNS: Column<Flavor>[] = [
  ...LIST_COLUMNS,
  { name: 'Swap', from: 'swap', missing: 0 },
  { name: 'RXTX Factor', from: 'rxtx_factor', format: floatColumn },
  { name: 'Properties', from: 'extra_specs', missing: {}, format: dictColumn },
]

/** The SDK resource's attributes under osc's names (`access_project_ids` is added by `flavor show`). */
const FIELDS: Column<Flavor>[] = [
  { name: 'OS-FLV-DISABLED:disabled' },
  { name: 'OS-FLV-EXT-DATA:ephemeral', missing: 0 },
  { name: 'description' },
  { name: 'disk', missing: 0 },
  { name: 'id' },
  { name: 'name' },
  { name: 'os-flavor-access:is_public', missing: true },
  { name: 'properties', from: 'extra_specs', missing: {}, format: dictColumn },
  { name: 'ram', missing: 0 },
  { name: 'rxtx_factor', format: floatColumn },
  { name: 'swap', missing: 0 },
  { name: 'vcpus', missing: 0 },
]
const SHOW_FIELDS: Column<Flavor>[] = [...FIELDS, { name: 'access_project_ids' }]

async function computeUrl(session: Session): Promise<string> {
  return session.endpoint('compute')
}

/** Every flavor of a list request, following Nova's `flavors_links` next links. */
async function listFlavors(session: Session, compute: string, filters: Record<string, string | number | undefined>): Promise<Flavor[]> {
  const flavors: Flavor[] = []
  for (let url: string | undefined = `${compute}/flavors/detail${query(filters)}`; url; ) {
    const body: { flavors: Flavor[]; flavors_links?: Link[] } = await session.get(url, FLAVOR_VERSION)
    flavors.push(...body.flavors)
    // An explicit --limit or --marker asks for one page, as osc switches the SDK's paging off for them.
    url = filters.limit || filters.marker ? undefined : body.flavors_links?.find((l) => l.rel === 'next')?.href
  }
  return flavors
}

/** A flavor by id or name, public or private; `wording` is the caller's (server commands use osc_lib's). */
export async function findFlavor(session: Session, nameOrId: string, wording: Wording = sdkWording('Flavor')): Promise<Flavor> {
  const compute = await computeUrl(session)
  return findResource<Flavor>(session, {
    wording,
    byId: (id) => `${compute}/flavors/${id}`,
    one: (body) => (body as { flavor: Flavor }).flavor,
    byName: () => `${compute}/flavors/detail?is_public=None`,
    many: (body) => (body as { flavors: Flavor[] }).flavors,
    matches: (f, x) => f.id === x || f.name === x,
    headers: FLAVOR_VERSION,
  }, nameOrId)
}

/** The SDK fetches extra specs when the body has none (an older microversion or a policy that hides them). */
async function withExtraSpecs(session: Session, compute: string, flavor: Flavor): Promise<Flavor> {
  if (flavor.extra_specs && Object.keys(flavor.extra_specs).length) return flavor
  const body = await session.get<{ extra_specs: Record<string, string> }>(`${compute}/flavors/${encodeURIComponent(flavor.id)}/os-extra_specs`, FLAVOR_VERSION)
  return { ...flavor, extra_specs: body.extra_specs }
}

export const flavorList: CommandSpec = {
  words: ['flavor', 'list'],
  summary: 'list flavors',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    LONG_FLAG,
    { name: 'public', type: 'boolean', help: 'list only public flavors (default)' },
    { name: 'private', type: 'boolean', help: 'list only private flavors' },
    { name: 'all', type: 'boolean', help: 'list all flavors, whether public or private' },
    { name: 'min-disk', type: 'string', help: 'filters the flavors by a minimum disk space, in GiB', placeholder: '<min-disk>' },
    { name: 'min-ram', type: 'string', help: 'filters the flavors by a minimum RAM, in MiB', placeholder: '<min-ram>' },
    { name: 'limit', type: 'string', help: 'maximum number of flavors to display', placeholder: '<num-flavors>' },
    { name: 'marker', type: 'string', help: 'the last flavor id of the previous page', placeholder: '<flavor-id>' },
  ],
  run: (context, flags) => {
    const visibility = oneOf(flags, ['public', 'private', 'all'])
    const filters = {
      is_public: visibility === 'all' ? 'None' : visibility === 'private' ? 'False' : 'True',
      minDisk: intFlag(flags, 'min-disk') || undefined,
      minRam: intFlag(flags, 'min-ram') || undefined,
      limit: intFlag(flags, 'limit') || undefined,
      marker: stringFlag(flags, 'marker'),
    }
    return withSession(context, async (session) => {
      const compute = await computeUrl(session)
      let flavors = await listFlavors(session, compute, filters)
      if (flags.long) flavors = await Promise.all(flavors.map((f) => withExtraSpecs(session, compute, f)))
      const columns = flags.long ? LONG_COLUMNS : LIST_COLUMNS
      return printList(context, flags, headers(columns), rows(columns, flavors))
    })
  },
}

export const flavorShow: CommandSpec = {
  words: ['flavor', 'show'],
  summary: 'display flavor details',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['flavor'],
  run: (context, flags, positionals) => {
    required(positionals, ['flavor'])
    return withSession(context, async (session) => {
      const compute = await computeUrl(session)
      const flavor = await withExtraSpecs(session, compute, await findFlavor(session, positionals[0]))
      // Only a private flavor has an access list; osc shows None for a public one.
      let access: string[] | null = null
      if (flavor['os-flavor-access:is_public'] === false) {
        const body = await session.get<{ flavor_access: { tenant_id: string }[] }>(`${compute}/flavors/${encodeURIComponent(flavor.id)}/os-flavor-access`, FLAVOR_VERSION)
        access = body.flavor_access.map((a) => a.tenant_id)
      }
      return printShow(context, flags, fields(SHOW_FIELDS, { ...flavor, access_project_ids: access }))
    })
  },
}

export const flavorCreate: CommandSpec = {
  words: ['flavor', 'create'],
  summary: 'create new flavor',
  flags: [
    ...SHOW_OUTPUT_FLAGS,
    { name: 'id', type: 'string', help: 'unique flavor ID (default: generated)', placeholder: '<id>' },
    { name: 'ram', type: 'string', help: 'memory size in MB (default 256M)', placeholder: '<size-mb>' },
    { name: 'disk', type: 'string', help: 'disk size in GB (default 0G)', placeholder: '<size-gb>' },
    { name: 'ephemeral', type: 'string', help: 'ephemeral disk size in GB (default 0G)', placeholder: '<size-gb>' },
    { name: 'swap', type: 'string', help: 'additional swap space size in MB (default 0M)', placeholder: '<size-mb>' },
    { name: 'vcpus', type: 'string', help: 'number of vcpus (default 1)', placeholder: '<vcpus>' },
    { name: 'rxtx-factor', type: 'string', help: 'RX/TX factor (default 1.0)', placeholder: '<factor>' },
    { name: 'public', type: 'boolean', help: 'flavor is available to other projects (default)' },
    { name: 'private', type: 'boolean', help: 'flavor is not available to other projects' },
    { name: 'property', type: 'string', repeatable: true, help: 'property to add for this flavor (repeat for several)', placeholder: '<key=value>' },
    { name: 'description', type: 'string', help: 'description for the flavor', placeholder: '<description>' },
  ],
  positionals: ['flavor-name'],
  run: (context, flags, positionals) => {
    required(positionals, ['flavor-name'])
    const rxtx = stringFlag(flags, 'rxtx-factor')
    if (rxtx !== undefined && !Number.isFinite(Number(rxtx))) throw new UsageError(`argument --rxtx-factor: invalid float value: '${rxtx}'`)
    const body = {
      name: positionals[0],
      ram: intFlag(flags, 'ram') ?? 256,
      vcpus: intFlag(flags, 'vcpus') ?? 1,
      disk: intFlag(flags, 'disk') ?? 0,
      id: stringFlag(flags, 'id'),
      'OS-FLV-EXT-DATA:ephemeral': intFlag(flags, 'ephemeral') ?? 0,
      swap: intFlag(flags, 'swap') ?? 0,
      rxtx_factor: rxtx === undefined ? 1 : Number(rxtx),
      'os-flavor-access:is_public': oneOf(flags, ['public', 'private']) !== 'private',
      description: stringFlag(flags, 'description'),
    }
    const properties = keyValueFlag(flags, 'property')
    return withSession(context, async (session) => {
      const compute = await computeUrl(session)
      let flavor = (await session.send<{ flavor: Flavor }>('POST', `${compute}/flavors`, { flavor: body }, FLAVOR_VERSION)).body.flavor
      if (properties) {
        const specs = await session.send<{ extra_specs: Record<string, string> }>('POST', `${compute}/flavors/${encodeURIComponent(flavor.id)}/os-extra_specs`, { extra_specs: properties }, FLAVOR_VERSION)
        flavor = { ...flavor, extra_specs: specs.body.extra_specs }
      }
      return printShow(context, flags, fields(FIELDS, flavor))
    })
  },
}

export const flavorDelete: CommandSpec = {
  words: ['flavor', 'delete'],
  summary: 'delete flavor(s)',
  flags: [],
  positionals: ['flavor'],
  variadic: true,
  run: (context, _flags, positionals) => {
    required(positionals, ['flavor'])
    return withSession(context, async (session) => {
      const compute = await computeUrl(session)
      return deleteEach(context, positionals, async (nameOrId) => {
        const flavor = await findFlavor(session, nameOrId)
        await session.send('DELETE', `${compute}/flavors/${encodeURIComponent(flavor.id)}`, undefined, FLAVOR_VERSION)
      }, {
        failed: (x, reason) => `Failed to delete flavor with name or ID '${x}': ${reason}`,
        summary: (n, total) => `${n} of ${total} flavors failed to delete.`,
      })
    })
  },
}

export const FLAVOR_COMMANDS: CommandSpec[] = [flavorList, flavorShow, flavorCreate, flavorDelete]
