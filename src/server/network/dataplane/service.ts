/**
 * The control plane's side of guest networking on hosts: what each host's data plane must be (host-state.ts),
 * answered to the host's agent at once or when it changes (a long poll on the data-plane revision), the writes
 * the hosts' needs cause (a network's DHCP port, made when a host first runs guests on it), and the metadata of
 * the guests a host asks for.
 */
import { createHash } from 'node:crypto'
import type { HostNetworkAnswer } from '../../../contracts/network/dataplane.js'
import { notFound } from '../../../contracts/errors.js'
import { loadInstanceFacts } from '../../metadata/load.js'
import { postPassword } from '../../metadata/password.js'
import { answerMetadata, isPasswordPath, type MetadataReply } from '../../metadata/service-paths.js'
import { postedPassword } from '../../compute/system-metadata.js'
import type { Store } from '../../storage/store.js'
import { ensureDhcpPort } from '../dhcp-ports.js'
import { isUniqueViolation } from '../ipam.js'
import { buildHostState } from './host-state.js'
import { DataplaneRevision } from './revision.js'

const METHOD_NOT_ALLOWED: MetadataReply = { status: 405, contentType: 'text/plain; charset=UTF-8', body: Buffer.from('405 Method Not Allowed\n\nA guest posts to /openstack/<version>/password only.\n') }

export class DataplaneService {
  readonly revision: DataplaneRevision

  constructor(
    private readonly store: Store,
    options: { pollMs?: number } = {},
  ) {
    this.revision = new DataplaneRevision(store, options.pollMs)
  }

  /** The host's data plane as it must be now, with its hash; 404 for an unknown host. */
  async state(hostId: string): Promise<HostNetworkAnswer> {
    let built = await buildHostState(this.store.db, hostId)
    if (built && built.dhcpIncomplete.length > 0) {
      await this.ensureDhcp(built.dhcpIncomplete)
      built = await buildHostState(this.store.db, hostId)
    }
    if (!built) throw notFound(`Host ${hostId} is not registered.`)
    const text = JSON.stringify(built.state)
    return { hash: createHash('sha256').update(text).digest('hex'), state: built.state }
  }

  /**
   * The long poll: the state as soon as its hash differs from `known`, or undefined once `waitMs` passed with
   * nothing new for this host (changes elsewhere wake the poll, recompute, and wait again).
   */
  async watch(hostId: string, known: string, waitMs: number, signal?: AbortSignal): Promise<HostNetworkAnswer | undefined> {
    const deadline = Date.now() + waitMs
    for (;;) {
      const rev = await this.revision.current()
      const answer = await this.state(hostId)
      if (answer.hash !== known) return answer
      const left = deadline - Date.now()
      if (left <= 0 || signal?.aborted) return undefined
      const next = await this.revision.waitForChange(rev, left, signal)
      if (Number.isNaN(next)) return undefined
    }
  }

  /**
   * The metadata service's answer to `path` for the guest of port `portId`, asked by host `hostId`'s agent (which
   * found the port from the request's source address). Only a guest port bound to that very host answers: a
   * host never reads the metadata of another host's guests, nor posts for them. 404 otherwise.
   *
   * `posted` is the body of a guest's POST: taken at `/openstack/<version>/password` only (password.ts), as
   * that port's server's password; a POST anywhere else is 405.
   */
  async metadata(hostId: string, portId: string, path: string, posted?: Buffer): Promise<MetadataReply> {
    const db = this.store.db
    const host = await db.selectFrom('hosts').select('hostname').where('id', '=', hostId).executeTakeFirst()
    const port = await db.selectFrom('ports').select(['device_id', 'device_owner', 'binding_host_id']).where('id', '=', portId).executeTakeFirst()
    if (!host || !port || !port.device_owner.startsWith('compute:') || port.binding_host_id !== host.hostname) throw notFound(`Port ${portId} is not a guest port of this host.`)
    const facts = await loadInstanceFacts(db, port.device_id)
    if (!facts) throw notFound(`Port ${portId} belongs to no server.`)
    const password = isPasswordPath(path)
    if (posted !== undefined) return password ? postPassword(this.store, facts.uuid, posted) : METHOD_NOT_ALLOWED
    return answerMetadata(facts, path, password ? await postedPassword(db, facts.uuid) : '')
  }

  stop(): void {
    this.revision.stop()
  }

  /** Creates or completes the DHCP ports of these networks, each in its own transaction (retried once on a race). */
  private async ensureDhcp(networkIds: string[]): Promise<void> {
    for (const networkId of networkIds) {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.store.db.transaction().execute((tx) => ensureDhcpPort({ db: tx, rowLocks: this.store.capabilities.rowLocks, now: Date.now() }, networkId))
          break
        } catch (err) {
          // Another process made it meanwhile, or the subnet is full: the next state read shows which.
          if (attempt >= 2 || !isUniqueViolation(err)) break
        }
      }
    }
  }
}
