/** Finds the storage place of a location: the control plane's own, or a storage host's through its agent. */
import type { AgentDriver } from '../../hosts/agent-driver.js'
import type { Db } from '../../storage/store.js'
import { setExportAddress } from '../exports.js'
import { AgentPlace } from './agent-place.js'
import { CONTROLLER, type ControllerPlace, type StoragePlace } from '../../../contracts/host/storage-place.js'

export class StoragePlaces {
  private readonly hosts = new Map<string, AgentPlace>()

  constructor(
    readonly controller: ControllerPlace,
    /** The agent of a registered host (the conductor's driver registry holds one per agent host). */
    private readonly agentOf: (hostId: string) => AgentDriver | undefined,
    private readonly db: Db,
  ) {}

  get(location: string): StoragePlace {
    if (location === CONTROLLER) return this.controller
    let place = this.hosts.get(location)
    if (!place) {
      const reported = () => reportedBackends(this.db, location)
      this.hosts.set(location, (place = new AgentPlace(location, () => this.agentOf(location), (address) => setExportAddress(this.db, location, address), reported)))
    }
    return place
  }
}

/** A storage host's last report of its backends' capacity. */
async function reportedBackends(db: Db, hostId: string): Promise<Record<string, { total_gb: number; free_gb: number }> | undefined> {
  const row = await db.selectFrom('storage_hosts').select('backends').where('host_id', '=', hostId).executeTakeFirst()
  return row ? (JSON.parse(row.backends) as Record<string, { total_gb: number; free_gb: number }>) : undefined
}
