/**
 * Which host runs a router: one of the hosts holding the `network` role (state ok), chosen by rendezvous
 * hashing — each router goes to the host with the highest hash of (router id, host id). Nothing is stored: every
 * process computes the same answer from the role table, and a host gaining or losing the role moves only the
 * routers that hash highest to it (Neutron's L3 agent scheduler stores a binding; deriving it keeps a removed
 * host from holding routers nobody runs).
 */
import { createHash } from 'node:crypto'
import type { Db } from '../../storage/store.js'
import { hostsWithAgentDown, L3_AGENT } from '../agents.js'

export const NETWORK_ROLE = 'network'

/**
 * The hosts that may run routers, sorted by id: those of the `network` role whose L3 agent an admin did not set
 * down (docs/network.md, "Agents"). Setting one down moves its routers to the others at once.
 */
export async function routerHosts(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('host_roles').select('host_id').where('role', '=', NETWORK_ROLE).where('state', '=', 'ok').orderBy('host_id').execute()
  const down = await hostsWithAgentDown(db, L3_AGENT)
  return rows.map((r) => r.host_id).filter((id) => !down.has(id))
}

/** The host of `hostIds` that runs the router, or undefined when there is none. */
export function placeRouter(routerId: string, hostIds: string[]): string | undefined {
  let best: string | undefined
  let bestWeight = ''
  for (const host of hostIds) {
    const weight = createHash('sha256').update(`${routerId}/${host}`).digest('hex')
    if (best === undefined || weight > bestWeight) {
      best = host
      bestWeight = weight
    }
  }
  return best
}
