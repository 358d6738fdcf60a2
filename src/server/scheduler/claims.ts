/**
 * Claims and releases of host capacity. A claim is one conditional UPDATE on the host row — it adds the
 * server's resources only while they still fit under capacity × ratio — plus the allocation row, in the
 * caller's transaction. Whichever process runs it and however many run at once, a host is never
 * over-committed: the database checks the condition against the row as it is when the UPDATE takes it.
 */
import { sql } from 'kysely'
import type { Db } from '../storage/store.js'
import type { Resources } from './host-state.js'

/** Adds `r` to the host's usage if it fits, and records it as the server's allocation there. False: no room. */
export async function claim(tx: Db, hostId: string, serverId: string, r: Resources, now = Date.now()): Promise<boolean> {
  const updated = await tx
    .updateTable('hosts')
    .set({
      vcpus_used: sql<number>`vcpus_used + ${r.vcpus}`,
      memory_mb_used: sql<number>`memory_mb_used + ${r.memoryMb}`,
      disk_gb_used: sql<number>`disk_gb_used + ${r.diskGb}`,
      running_vms: sql<number>`running_vms + 1`,
    })
    .where('id', '=', hostId)
    .where(sql<boolean>`vcpus_used + ${r.vcpus} <= vcpus * cpu_allocation_ratio`)
    .where(sql<boolean>`memory_mb_used + ${r.memoryMb} <= memory_mb * ram_allocation_ratio`)
    .where(sql<boolean>`disk_gb_used + ${r.diskGb} <= disk_gb * disk_allocation_ratio`)
    .executeTakeFirst()
  if (updated.numUpdatedRows === 0n) return false
  const existing = await tx.selectFrom('allocations').select('server_id').where('server_id', '=', serverId).where('host_id', '=', hostId).executeTakeFirst()
  if (existing) {
    // A resize on the same host holds old and new flavor together until it is confirmed or reverted; the
    // server counts once in running_vms.
    await tx
      .updateTable('allocations')
      .set({ vcpus: sql<number>`vcpus + ${r.vcpus}`, memory_mb: sql<number>`memory_mb + ${r.memoryMb}`, disk_gb: sql<number>`disk_gb + ${r.diskGb}` })
      .where('server_id', '=', serverId)
      .where('host_id', '=', hostId)
      .execute()
    await tx.updateTable('hosts').set({ running_vms: sql<number>`running_vms - 1` }).where('id', '=', hostId).execute()
  } else {
    await tx.insertInto('allocations').values({ server_id: serverId, host_id: hostId, vcpus: r.vcpus, memory_mb: r.memoryMb, disk_gb: r.diskGb, created_at: now }).execute()
  }
  return true
}

/**
 * Gives back what the server holds (on one host, or everywhere). Deleting the allocation row first makes it
 * safe to run twice: only the caller that removed the row subtracts its amounts.
 */
export async function releaseAll(tx: Db, serverId: string, hostId?: string): Promise<number> {
  const rows = await tx
    .deleteFrom('allocations')
    .where('server_id', '=', serverId)
    .$if(hostId !== undefined, (q) => q.where('host_id', '=', hostId!))
    .returningAll()
    .execute()
  for (const a of rows) {
    await tx
      .updateTable('hosts')
      .set({
        vcpus_used: sql<number>`vcpus_used - ${a.vcpus}`,
        memory_mb_used: sql<number>`memory_mb_used - ${a.memory_mb}`,
        disk_gb_used: sql<number>`disk_gb_used - ${a.disk_gb}`,
        running_vms: sql<number>`running_vms - 1`,
      })
      .where('id', '=', a.host_id)
      .execute()
  }
  return rows.length
}

/** Gives back part of an allocation (the old flavor after a same-host resize is confirmed, or the new one on revert). */
export async function releasePart(tx: Db, serverId: string, hostId: string, r: Resources): Promise<void> {
  const row = await tx.selectFrom('allocations').selectAll().where('server_id', '=', serverId).where('host_id', '=', hostId).executeTakeFirst()
  if (!row) return
  if (row.vcpus <= r.vcpus && row.memory_mb <= r.memoryMb && row.disk_gb <= r.diskGb) {
    await releaseAll(tx, serverId, hostId)
    return
  }
  const taken = await tx
    .updateTable('allocations')
    .set({ vcpus: row.vcpus - r.vcpus, memory_mb: row.memory_mb - r.memoryMb, disk_gb: row.disk_gb - r.diskGb })
    .where('server_id', '=', serverId)
    .where('host_id', '=', hostId)
    .where('vcpus', '=', row.vcpus)
    .where('memory_mb', '=', row.memory_mb)
    .where('disk_gb', '=', row.disk_gb)
    .executeTakeFirst()
  if (taken.numUpdatedRows === 0n) return
  await tx
    .updateTable('hosts')
    .set({
      vcpus_used: sql<number>`vcpus_used - ${r.vcpus}`,
      memory_mb_used: sql<number>`memory_mb_used - ${r.memoryMb}`,
      disk_gb_used: sql<number>`disk_gb_used - ${r.diskGb}`,
    })
    .where('id', '=', hostId)
    .execute()
}
