/**
 * Cinder's scheduler statistics (`/scheduler-stats/get_pools`) and backend capabilities (`/capabilities/{host}`):
 * one pool per volume service that takes new volumes (up and enabled, as Cinder's scheduler keeps them), named
 * `<place>@<backend>#<backend>` as volumes' `os-vol-host-attr:host` names theirs, with the capacity its place
 * measures (the controller) or last reported (a storage host).
 */
import { notFound } from '../../contracts/errors.js'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import type { Db } from '../storage/store.js'
import { DRIVER_VERSION, factsOf, VENDOR } from './capabilities.js'
import { cinderTime } from './model.js'
import type { StoragePlaces } from './places/registry.js'
import { listServices, VOLUME_BINARY, type ServiceScope, type VolumeServiceRecord } from './volume-services.js'

export interface Pool {
  name: string
  capabilities: Record<string, unknown>
}

/** The place (`controller` or a storage host's id) of a volume service, which names it by hostname. */
async function placeOf(db: Db, service: VolumeServiceRecord): Promise<string | undefined> {
  const [place] = service.host.split('@')
  if (place === CONTROLLER) return CONTROLLER
  const host = await db.selectFrom('hosts').select('id').where('hostname', '=', place).executeTakeFirst()
  return host?.id
}

/** GiB given to the volumes of a backend at a place. */
async function allocatedGb(db: Db, location: string, backend: string): Promise<number> {
  const row = await db.selectFrom('volumes').select((eb) => eb.fn.sum<number>('size').as('gb')).where('location', '=', location).where('backend', '=', backend).executeTakeFirst()
  return Number(row?.gb ?? 0)
}

/** The pools new volumes may go to, with their capacity; a place that cannot tell its capacity is left out. */
export async function listPools(db: Db, places: StoragePlaces, scope: ServiceScope): Promise<Pool[]> {
  const services = (await listServices(db, scope)).filter((s) => s.binary === VOLUME_BINARY && s.up && !s.disabled)
  const pools: Pool[] = []
  for (const service of services) {
    const backend = service.host.split('@')[1]
    const location = await placeOf(db, service)
    if (location === undefined) continue
    const capacity = await places
      .get(location)
      .capacity(backend)
      .catch(() => undefined)
    if (!capacity) continue
    const facts = factsOf(backend)
    pools.push({
      name: `${service.host}#${backend}`,
      capabilities: {
        pool_name: backend,
        volume_backend_name: backend,
        vendor_name: VENDOR,
        driver_version: DRIVER_VERSION,
        storage_protocol: facts.storageProtocol,
        total_capacity_gb: capacity.totalGb,
        free_capacity_gb: capacity.freeGb,
        allocated_capacity_gb: await allocatedGb(db, location, backend),
        reserved_percentage: 0,
        thin_provisioning_support: facts.thin,
        thick_provisioning_support: !facts.thin,
        multiattach: true,
        QoS_support: false,
        timestamp: cinderTime(service.updatedAt),
      },
    })
  }
  return pools
}

/**
 * A volume service's backend capabilities (`<place>@<backend>`, a pool name's `#pool` allowed): what it is and
 * the properties volume types may ask for. 404 for a host without an up volume service.
 */
export async function backendCapabilities(db: Db, scope: ServiceScope, host: string): Promise<Record<string, unknown>> {
  const name = host.split('#')[0]
  const service = (await listServices(db, scope)).find((s) => s.binary === VOLUME_BINARY && s.host === name && s.up)
  if (!service) throw notFound(`Host ${host} could not be found.`)
  const backend = name.split('@')[1]
  const facts = factsOf(backend)
  return {
    namespace: `OS::Storage::Capabilities::${name}`,
    vendor_name: VENDOR,
    volume_backend_name: backend,
    pool_name: null,
    driver_version: DRIVER_VERSION,
    storage_protocol: facts.storageProtocol,
    display_name: null,
    description: facts.description,
    visibility: null,
    replication_targets: [],
    properties: {
      thin_provisioning: { title: 'Thin Provisioning', description: facts.thin ? 'Volumes are thin: space is used as data is written.' : 'Volumes are thick: their whole size is allocated at creation.', type: 'boolean' },
      multiattach: { title: 'Multiattach', description: 'Volumes of a type with multiattach "<is> True" attach to several servers.', type: 'boolean' },
    },
  }
}
