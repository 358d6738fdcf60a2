/**
 * Provider attributes (Neutron's `provider` extension): how a network reaches the wire on the hosts.
 *
 * Tenant networks are VXLAN networks with a VNI the service allocates (lowest free above the highest in use,
 * wrapping round to the lowest gap), as ML2's vxlan type driver does; admins may instead name a `flat` network
 * on a physical network, which every host maps to one of its interfaces (agent.json `network.physical_interfaces`).
 * The rules per type are one table; the MTU a type allows follows the physical network's MTU minus the
 * encapsulation overhead (1500 − 50 = 1450 for VXLAN over IPv4; docs/network.md, "Decisions", MTU).
 */
import type { NetworkTable } from '../storage/schema.js'
import type { NetCtx } from './context.js'
import { neutron } from './errors.js'

/** The MTU of the hosts' physical networks (Neutron's global_physnet_mtu). */
export const PHYSNET_MTU = 1500

interface NetworkTypeRule {
  /** Whether the type is carried on a named physical network. */
  physicalNetwork: boolean
  /** The segmentation ids the type takes, or null when it takes none. */
  segments: { min: number; max: number } | null
  /** Bytes of encapsulation taken from the physical network's MTU. */
  overhead: number
}

export const NETWORK_TYPES: Record<string, NetworkTypeRule> = {
  vxlan: { physicalNetwork: false, segments: { min: 1, max: 2 ** 24 - 1 }, overhead: 50 },
  flat: { physicalNetwork: true, segments: null, overhead: 0 },
}

/** The type tenant networks get when the creator names none (ML2's tenant_network_types). */
export const TENANT_NETWORK_TYPE = 'vxlan'

export interface ProviderBody {
  'provider:network_type'?: string | null
  'provider:physical_network'?: string | null
  'provider:segmentation_id'?: number | null
}

export type Segment = Pick<NetworkTable, 'network_type' | 'physical_network' | 'segmentation_id'>

export function hasProviderAttributes(body: ProviderBody): boolean {
  return body['provider:network_type'] != null || body['provider:physical_network'] != null || body['provider:segmentation_id'] != null
}

/** The largest MTU a network of this type can carry. */
export function maxMtu(type: string): number {
  return PHYSNET_MTU - (NETWORK_TYPES[type]?.overhead ?? 0)
}

/** Validates the requested provider attributes (Neutron's wording) and allocates a VNI when none is named. */
export async function resolveSegment(ctx: NetCtx, body: ProviderBody): Promise<Segment> {
  const requested = body['provider:network_type'] ?? undefined
  if (requested === undefined && hasProviderAttributes(body)) throw neutron.invalidInput('network_type required')
  const type = requested ?? TENANT_NETWORK_TYPE
  const rule = NETWORK_TYPES[type]
  if (!rule) throw neutron.invalidInput(`network_type value '${type}' not supported`)
  const physnet = body['provider:physical_network'] ?? null
  const id = body['provider:segmentation_id'] ?? null
  if (rule.physicalNetwork && !physnet) throw neutron.invalidInput(`physical_network required for ${type} provider network`)
  if (!rule.physicalNetwork && physnet) throw neutron.invalidInput(`provider:physical_network specified for ${type} network`)
  if (!rule.segments) {
    if (id !== null) throw neutron.invalidInput(`segmentation_id prohibited for ${type} provider network`)
    const taken = await ctx.db.selectFrom('networks').select('id').where('network_type', '=', type).where('physical_network', '=', physnet).executeTakeFirst()
    if (taken) throw neutron.conflict('FlatNetworkInUse', `Unable to create the flat network. Physical network ${physnet} is in use.`)
    return { network_type: type, physical_network: physnet, segmentation_id: null }
  }
  const { min, max } = rule.segments
  if (id !== null) {
    if (id < min || id > max) throw neutron.invalidInput(`segmentation_id out of range (${min} through ${max})`)
    const taken = await ctx.db.selectFrom('networks').select('id').where('network_type', '=', type).where('segmentation_id', '=', id).executeTakeFirst()
    if (taken) throw neutron.conflict('TunnelIdInUse', `Unable to create the network. The tunnel ID ${id} is in use.`)
    return { network_type: type, physical_network: null, segmentation_id: id }
  }
  return { network_type: type, physical_network: null, segmentation_id: await freeSegment(ctx, type, min, max) }
}

/**
 * The next VNI: one above the highest in use, else the lowest gap. Two creators racing for the same one are
 * parted by the unique index (the API retries the losing transaction).
 */
async function freeSegment(ctx: NetCtx, type: string, min: number, max: number): Promise<number> {
  const top = await ctx.db.selectFrom('networks').select((eb) => eb.fn.max('segmentation_id').as('top')).where('network_type', '=', type).executeTakeFirst()
  const highest = Number(top?.top ?? min - 1)
  if (highest < max) return highest + 1
  const used = await ctx.db.selectFrom('networks').select('segmentation_id').where('network_type', '=', type).orderBy('segmentation_id').execute()
  let candidate = min
  for (const row of used) {
    if (row.segmentation_id !== candidate) break
    candidate++
  }
  if (candidate > max) throw neutron.conflict('NoNetworkAvailable', 'Unable to create the network. No tenant network is available for allocation.')
  return candidate
}

/** Changing a segment under ports would cut them off: Neutron's ML2 refuses it too. */
export function checkSegmentUnchanged(row: NetworkTable, body: ProviderBody): void {
  const same =
    (body['provider:network_type'] == null || body['provider:network_type'] === row.network_type) &&
    (body['provider:physical_network'] == null || body['provider:physical_network'] === row.physical_network) &&
    (body['provider:segmentation_id'] == null || body['provider:segmentation_id'] === row.segmentation_id)
  if (!same) throw neutron.invalidInput('Plugin does not support updating the following provider network attributes: provider:network_type, provider:physical_network, provider:segmentation_id')
}
