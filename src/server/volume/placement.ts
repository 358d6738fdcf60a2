/**
 * Which backend and which storage place a volume gets, from its volume type's extra specs — Cinder's
 * `volume_backend_name` picks the backend, pcc's `pcc:placement` the kind of place — and the storage host
 * chosen for it: among hosts whose `storage` role is ok and that are up, one whose report offers the backend
 * with enough free space, the most free first (Cinder's capacity weigher). A backend whose volume service an
 * admin disabled or froze gets none (volume-services.ts).
 */
import { badRequest } from '../../contracts/errors.js'
import { VolumeBackendError } from '../../contracts/host/volume.js'
import { isUp } from '../hosts/host-status.js'
import type { Db } from '../storage/store.js'
import type { VolumeTypeRecord } from './model.js'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import { closedBackends } from './volume-services.js'
import { unmetCapabilities } from './capabilities.js'

type PlaceKind = 'controller' | 'storage-host'

/** The backends, where each may live, and where it lives when the type does not say. */
export const BACKEND_RULES: Record<string, { places: PlaceKind[]; defaultPlace: PlaceKind }> = {
  file: { places: ['controller', 'storage-host'], defaultPlace: 'controller' },
  lvm: { places: ['storage-host'], defaultPlace: 'storage-host' },
  // Ceph is reached from every pcc-server process alike: the control plane does its work (docs/ceph.md).
  ceph: { places: ['controller'], defaultPlace: 'controller' },
}

export const DEFAULT_BACKEND = 'file'

export interface VolumeLayout {
  backend: string
  place: PlaceKind
  multiattach: boolean
  /** The extra specs naming capabilities the backend lacks (capabilities.ts): such a type finds no backend. */
  unmet: string[]
}

/** Cinder's boolean extra spec syntax: `<is> True`. */
function specTrue(value: string | undefined): boolean {
  return value !== undefined && /^(<is>\s*)?true$/i.test(value.trim())
}

/** What a type's extra specs ask for; 400 for a backend or placement that does not exist or cannot go together. */
export function layoutOf(extraSpecs: Record<string, string>): VolumeLayout {
  const backend = extraSpecs.volume_backend_name ?? DEFAULT_BACKEND
  const rule = BACKEND_RULES[backend]
  if (!rule) throw badRequest(`Invalid volume_backend_name '${backend}': expected one of ${Object.keys(BACKEND_RULES).join(', ')}.`)
  const place = (extraSpecs['pcc:placement'] ?? rule.defaultPlace) as PlaceKind
  if (!rule.places.includes(place)) throw badRequest(`Invalid pcc:placement '${place}' for backend ${backend}: expected one of ${rule.places.join(', ')}.`)
  return { backend, place, multiattach: specTrue(extraSpecs.multiattach), unmet: unmetCapabilities(backend, extraSpecs) }
}

export function typeLayout(type: VolumeTypeRecord): VolumeLayout {
  return layoutOf(type.extraSpecs)
}

/** Whether a volume at `location` with `backend` already fits a type's layout (a retype that moves no bytes). */
export function fitsLayout(volume: { backend: string; location: string | null }, layout: VolumeLayout): boolean {
  if (volume.backend !== layout.backend) return false
  const kind: PlaceKind = volume.location === CONTROLLER ? 'controller' : 'storage-host'
  return volume.location === null || kind === layout.place
}

/**
 * The place for a new volume of `sizeGb` with this layout: the controller, or the up storage host that offers
 * the backend with the most free GiB (at least `sizeGb`). A VolumeBackendError in Cinder's words when none fits.
 */
export async function choosePlace(db: Db, layout: VolumeLayout, sizeGb: number, downAfterMs: number, now = Date.now()): Promise<string> {
  if (layout.unmet.length > 0) throw new VolumeBackendError(`No valid backend was found: the ${layout.backend} backend does not have ${layout.unmet.join(', ')}.`)
  const closed = await closedBackends(db)
  if (layout.place === 'controller') {
    const service = `${CONTROLLER}@${layout.backend}`
    if (closed.has(service)) throw new VolumeBackendError(`No valid backend was found: the volume service ${service} is disabled or frozen.`)
    return CONTROLLER
  }
  const rows = await db
    .selectFrom('storage_hosts')
    .innerJoin('hosts', 'hosts.id', 'storage_hosts.host_id')
    .innerJoin('host_roles', 'host_roles.host_id', 'storage_hosts.host_id')
    .select(['storage_hosts.host_id', 'storage_hosts.backends', 'hosts.hostname', 'hosts.last_heartbeat_at', 'hosts.forced_down', 'hosts.service_status'])
    .where('host_roles.role', '=', 'storage')
    .where('host_roles.state', '=', 'ok')
    .execute()
  let best: { hostId: string; free: number } | undefined
  for (const row of rows) {
    if (!isUp(row, now, downAfterMs) || closed.has(`${row.hostname}@${layout.backend}`)) continue
    const offer = (JSON.parse(row.backends) as Record<string, { free_gb: number }>)[layout.backend]
    if (!offer || offer.free_gb < sizeGb) continue
    if (!best || offer.free_gb > best.free) best = { hostId: row.host_id, free: offer.free_gb }
  }
  if (!best) throw new VolumeBackendError(`No valid backend was found: no storage host that is up and enabled offers the ${layout.backend} backend with ${sizeGb} GiB free.`)
  return best.hostId
}
