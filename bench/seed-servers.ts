/**
 * Active servers written straight into the store in batches of 400 (a quarter of them tagged `bench`), one second
 * apart in creation time, for the benchmarks that need a large project. Answers the id of the last one.
 */
import { randomUUID } from 'node:crypto'
import type { ServerTable } from '../src/server/storage/schema.js'
import type { Db } from '../src/server/storage/store.js'

export async function seedServers(db: Db, projectId: string, userId: string, count: number, firstDisplayId: number): Promise<string> {
  const flavor = JSON.stringify({ id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} })
  const t0 = Date.now() - count * 1000
  let some = ''
  for (let done = 0; done < count; done += 400) {
    const batch: ServerTable[] = []
    for (let i = done; i < Math.min(count, done + 400); i++) {
      const id = randomUUID()
      some = id
      batch.push({
        id, rev: 0, display_id: firstDisplayId + i, name: `bench-${i}`, description: null, project_id: projectId, user_id: userId, host_id: null, host: `sim-${i % 3}`, node: `sim-${i % 3}`,
        vm_state: 'active', task_state: null, power_state: 1, flavor, old_flavor: null, new_flavor: null, image_id: '70a599e0-31e7-49b7-b260-868f441e862b', key_name: null, key_data: null,
        metadata: '{"role":"bench"}', access_ip_v4: '', access_ip_v6: '', availability_zone: 'nova', pinned_availability_zone: null, config_drive: 0, disk_config: 'MANUAL', user_data: null,
        hostname: `bench-${i}`, locked: 0, locked_by: null, locked_reason: null, launch_index: 0, reservation_id: `r-${(i % 99999999).toString(36).padStart(8, '0')}`, root_device_name: '/dev/vda',
        kernel_id: null, ramdisk_id: null, progress: 0, trusted_image_certificates: null, scheduler_hints: null, security_groups: '["default"]', requested_networks: '"auto"', block_devices: '[]',
        created_at: t0 + i * 1000, updated_at: t0 + i * 1000, launched_at: t0 + i * 1000 + 500, terminated_at: null, deleted_at: null, deleted: 0,
      })
    }
    await db.insertInto('servers').values(batch).execute()
    await db.insertInto('server_tags').values(batch.filter((_, j) => j % 4 === 0).map((s) => ({ server_id: s.id, tag: 'bench' }))).execute()
  }
  return some
}
