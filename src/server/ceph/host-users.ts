/**
 * Hosts learn Ceph from the control plane, never from a file copied by hand (docs/ceph.md, "cephx users and caps"):
 * the first time a host asks, the control plane makes it a cephx user of its own, `client.pcc-host-<host id>`, with
 * `profile rbd` on the volumes and vms pools and read-only on images — enough to open its guests' disks and
 * volumes, nothing of the cluster's administration — and keeps the key sealed with the master key. The host gets
 * the cluster's ceph.conf, its user and key on its own authenticated endpoint. Removing a host removes its user,
 * so a host that is gone can no longer reach any disk.
 */
import type { SecretBox } from '../crypto/secret-box.js'
import type { Db } from '../storage/store.js'
import type { CephLink } from './connect.js'

export interface HostCephAccess {
  /** The cluster's ceph.conf, as the operator gave it. */
  conf: string
  /** The host's cephx user, without `client.`. */
  user: string
  key: string
  pools: { images: string; volumes: string; vms: string }
}

export function hostCephUser(hostId: string): string {
  return `pcc-host-${hostId.toLowerCase()}`
}

/** A host's cephx caps: read and write its guests' disks and volumes, read images (to clone them). */
export function hostCaps(pools: { images: string; volumes: string; vms: string }): string[] {
  return ['mon', 'profile rbd', 'osd', `profile rbd pool=${pools.vms}, profile rbd pool=${pools.volumes}, profile rbd-read-only pool=${pools.images}`]
}

export class HostCephUsers {
  constructor(
    private readonly ceph: CephLink,
    private readonly db: Db,
    private readonly box: SecretBox,
  ) {}

  /** The host's access, making its cephx user the first time (idempotent: `get-or-create` answers the same key). */
  async accessFor(hostId: string): Promise<HostCephAccess> {
    const user = hostCephUser(hostId)
    const row = await this.db.selectFrom('host_ceph_users').select(['ceph_user', 'key_sealed']).where('host_id', '=', hostId).executeTakeFirst()
    let key = row ? this.box.open(row.key_sealed).toString('utf8') : undefined
    if (!key) {
      key = await this.createUser(user)
      await this.db
        .insertInto('host_ceph_users')
        .values({ host_id: hostId, ceph_user: user, key_sealed: this.box.seal(key), created_at: Date.now() })
        .onConflict((oc) => oc.column('host_id').doNothing())
        .execute()
    }
    return { conf: this.ceph.clusterConf, user, key, pools: this.ceph.pools }
  }

  private async createUser(user: string): Promise<string> {
    const answer = JSON.parse(await this.ceph.rbd.ceph(['auth', 'get-or-create', `client.${user}`, ...hostCaps(this.ceph.pools), '--format', 'json'])) as { key: string }[]
    const key = answer[0]?.key
    if (!key) throw new Error(`ceph auth get-or-create answered no key for client.${user}`)
    return key
  }

  /** Removes a host's user (the host was deleted): its sessions can open nothing any more. */
  async remove(hostId: string): Promise<void> {
    await this.ceph.rbd.ceph(['auth', 'del', `client.${hostCephUser(hostId)}`]).catch((err: Error & { errno?: number }) => {
      if (err.errno !== 2) throw err
    })
    await this.db.deleteFrom('host_ceph_users').where('host_id', '=', hostId).execute()
  }
}
