/**
 * The storage place conformance suite on AgentPlace: a real pcc-server on 127.0.0.1 and a real pcc-agent with
 * the `storage` role, whose storage role executes the place's `volume.*` commands with its own file backend under
 * its root. Image bytes travel through the real image service and the host endpoints; the exports the agent
 * serves are the ones recorded in the store, as the volume service records them.
 */
import type { ChildProcess } from 'node:child_process'
import { createReadStream, createWriteStream, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { storagePlaceConformance } from '../../src/host/storage/conformance/place-suite.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { VolumeBackendError, type VolumeRef } from '../../src/contracts/host/volume.js'
import type { WantedExport } from '../../src/contracts/host/storage-place.js'
import { adminSession, call, eventually } from '../image/support.js'

/** Starts the server and the agent, and waits until the host's storage role is ok and its place answers. */
async function storageHost(server: TestServer): Promise<{ host: ScratchHost; agent: ChildProcess }> {
  const admin = await adminSession(server)
  const token = await server.deps.onboarding.createRegistrationToken(admin.userId, 3600, 'place conformance')
  const host = scratchHost({ hostname: 'place1', controller: server.url, registrationToken: token.token })
  const agent = spawnAgent(host.root)
  await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200, 20_000, 'registration')
  const role = await call(server, admin, 'PUT', `/resmgr/v1/hosts/${host.hostId}/roles/storage`, {})
  if (role.status !== 200) throw new Error(`storage role: ${role.status} ${JSON.stringify(role.body)}`)
  await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).body.roles_status_details.storage === 'ok', 20_000, 'the storage role')
  // The control plane finds the host's agent once its driver registry has synced the new host.
  await eventually(() => server.deps.volumeServices.places.get(host.hostId).syncExports().then(() => true, () => false), 20_000, 'the place to answer')
  return { host, agent }
}

storagePlaceConformance('AgentPlace (a storage host)', async () => {
  const server = await startTestServer({ env: { PCC_VOLUME_EXPORT_ADDRESS: '127.0.0.1' } })
  let started: { host: ScratchHost; agent: ChildProcess } | undefined
  const stopAll = async () => {
    if (started) await killAgent(started.agent)
    if (started) await new ExportManager(join(started.host.root, 'run/pcc/volumes')).stopAll()
    await server.close()
    if (started) rmSync(started.host.root, { recursive: true, force: true })
  }
  try {
    started = await storageHost(server)
  } catch (err) {
    await stopAll()
    throw err
  }
  const { host } = started
  const db = server.deps.store.db
  const { bootstrap } = server
  const defaultType = await db.selectFrom('volume_types').select('id').where('name', '=', '__DEFAULT__').executeTakeFirstOrThrow()

  /** The volume's row as the volume service has it at this host (created or updated to `status`). */
  const volumeRow = async (volumeId: string, fields: { status: string; size?: number; image_id?: string }) => {
    const now = Date.now()
    const existing = await db.selectFrom('volumes').select('id').where('id', '=', volumeId).executeTakeFirst()
    if (existing) return void (await db.updateTable('volumes').set({ ...fields, updated_at: now }).where('id', '=', volumeId).execute())
    await db
      .insertInto('volumes')
      .values({
        id: volumeId, rev: 0, project_id: bootstrap.adminProjectId, user_id: bootstrap.adminUserId, name: null, description: null, size: 1, volume_type_id: defaultType.id,
        availability_zone: 'nova', bootable: 0, snapshot_id: null, source_volid: null, image_id: null, image_metadata: null, metadata: '{}', created_at: now, updated_at: now,
        backend: 'file', location: host.hostId, status_reason: null, multiattach: 0, ...fields,
      })
      .execute()
  }

  const place = server.deps.volumeServices.places.get(host.hostId)
  return {
    place,
    restart: async () => {
      await killAgent(started!.agent)
      started!.agent = spawnAgent(host.root)
      await eventually(() => place.syncExports().then(() => true, () => false), 30_000, 'the restarted agent to take calls')
      return place
    },
    node: (ref: VolumeRef) => {
      const name = 'volumeId' in ref ? `volume-${ref.volumeId}` : `snapshot-${ref.snapshotId}`
      const readOnly = 'snapshotId' in ref ? { 'read-only': true } : {}
      return { driver: 'raw', ...readOnly, file: { driver: 'file', filename: join(host.root, 'var/lib/pcc/volumes', name), ...readOnly } }
    },
    images: {
      add: async (path, format) => {
        const image = await server.deps.images.createSnapshotImage({ name: 'place conformance', projectId: bootstrap.adminProjectId, diskFormat: format, imageType: null })
        await server.deps.images.completeSnapshotImage(image.id, createReadStream(path))
        return image.id
      },
      queueUpload: async (volumeId, diskFormat) => {
        const image = await server.deps.images.createSnapshotImage({ name: `from ${volumeId}`, projectId: bootstrap.adminProjectId, diskFormat, imageType: null })
        await volumeRow(volumeId, { status: 'uploading' })
        await db.insertInto('volume_image_uploads').values({ image_id: image.id, volume_id: volumeId, disk_format: diskFormat, created_at: Date.now() }).execute()
        return image.id
      },
      saveTo: async (imageId, path) => {
        const { stream } = await server.deps.images.openBytes(imageId)
        await pipeline(stream, createWriteStream(path))
      },
    },
    record: {
      creatingFromImage: (volumeId, sizeGb, imageId) => volumeRow(volumeId, { status: 'creating', size: sizeGb, image_id: imageId }),
      exports: async (wanted: WantedExport[]) => {
        await db.deleteFrom('volume_export_keys').where('volume_id', 'in', db.selectFrom('volume_exports').select('volume_id').where('location', '=', host.hostId)).execute()
        await db.deleteFrom('volume_exports').where('location', '=', host.hostId).execute()
        for (const w of wanted) {
          await volumeRow(w.snapshotOf ?? w.volumeId, { status: 'in-use' })
          await db.insertInto('volume_exports').values({ volume_id: w.volumeId, snapshot_of: w.snapshotOf ?? null, location: host.hostId, address: null, port: w.port, generations: JSON.stringify(w.generations), created_at: Date.now() }).execute()
          for (const k of w.keys) {
            await db.insertInto('volume_export_keys').values({ identity: k.identity, volume_id: w.volumeId, attachment_id: null, sealed_key: server.deps.box.seal(k.key), created_at: Date.now() }).execute()
          }
        }
      },
    },
    // The agent serves where it reaches the control plane from.
    exportAddress: '127.0.0.1',
    // AgentPlace turns the agent's backend failures (DriverError BACKEND_FAILURE) into VolumeBackendErrors.
    isBackendFailure: (err) => err instanceof VolumeBackendError,
    cleanup: stopAll,
  }
})

