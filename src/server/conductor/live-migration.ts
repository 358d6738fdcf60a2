/**
 * Live migration between two hosts, sequenced here as Nova's compute manager does it, one host's step at a time:
 *
 * 1. destination `prepareLiveMigration` (Nova's pre_live_migration): it readies itself to receive the guest and
 *    answers a handle (for QEMU: where its NBD exports and migration stream listen);
 * 2. source `liveMigrateTo` (live_migration): the running guest's disks and memory go to that handle; the source
 *    answers a handover (the console's history, the boot count);
 * 3. destination `finishLiveMigration` (post_live_migration_at_destination): the guest runs on there;
 * 4. source `forget` (post_live_migration): the source lets go of what it still holds.
 *
 * A failure of step 2 rolls back (rollback_live_migration): the destination drops what it prepared
 * (`abortLiveMigration`) and the guest runs on at the source. So does a cancel (the API's abort): the source's
 * `cancelLiveMigration`, beside its running step 2, makes that step fail as cancelled; a force-complete
 * (`forceCompleteLiveMigration`) only makes step 2 end sooner, the steps stay the same. Only handles and handovers (JSON) pass between the
 * hosts, so each step may run on a different machine (agent hosts: one command each, src/contracts/host/commands.ts).
 */
import type { ComputeDriver, GuestSpec, LiveMigrationHandover } from '../../contracts/host/compute-driver.js'

/**
 * Moves the running guest `spec.serverId` from `source` to `destination` (`spec`: as the destination runs it).
 * `copying` runs once the destination is ready, before the source sends (the migration becomes `running`); when
 * it throws, the destination lets go and the error is the migration's.
 */
export async function migrateLive(source: ComputeDriver, destination: ComputeDriver, spec: GuestSpec, copying: () => Promise<void> = async () => {}): Promise<void> {
  const serverId = spec.serverId
  const handle = await destination.prepareLiveMigration(spec)
  let handover: LiveMigrationHandover
  try {
    await copying()
    handover = await source.liveMigrateTo(serverId, handle)
  } catch (err) {
    // The migration's own failure is what the server's fault should say, not a failed clean-up's.
    await destination.abortLiveMigration(serverId).catch(() => {})
    throw err
  }
  await destination.finishLiveMigration(serverId, handover)
  await source.forget(serverId)
}
