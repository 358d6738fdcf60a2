/**
 * Backups of volumes on a storage host (a real pcc-agent with the `storage` role in its own network namespace): the
 * control plane reads the volume's bytes over NBD through an export to a key of the backup's own, and a restore
 * writes them back the same way — onto a new volume on the host, an existing one whose old bytes it replaces, and
 * a new volume on the control plane. Afterwards no export key, no daemon and no scratch file is left, also when
 * the copy fails. A snapshot of a host's volume is read through a read-only export of the snapshot itself.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { closeStorageTestbed, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { localIo } from '../../src/testkit/nbd.js'
import type { BlockdevSpec } from '../../src/contracts/host/volume.js'
import { adminSession, call, eventually, type Session } from '../image/support.js'

const V = '/volume/v3'
const LATEST = { 'openstack-api-version': 'volume 3.60' }
const fileNode = (path: string): BlockdevSpec => ({ driver: 'raw', file: { driver: 'file', filename: path } })

/** The bytes backed up: two chunks (4 MiB each) with patterns, the rest zeros. */
const WRITTEN = ['write -P 0x5a 0 1M', 'write -P 0xa5 5M 1M']
const BACKED_UP = ['read -P 0x5a 0 1M', 'read -P 0 1M 4M', 'read -P 0xa5 5M 1M', 'read -P 0 6M 10M']

describe('backups of volumes on a storage host', () => {
  let net: TestNetwork
  let server: TestServer
  let admin: Session
  let host: ScratchHost
  let agent: ChildProcess
  const hostFile = (id: string) => join(host.root, 'var/lib/pcc/volumes', `volume-${id}`)
  const controllerFile = (id: string) => join(server.dataDir, 'volumes', `volume-${id}`)

  const status = (kind: 'volumes' | 'backups', id: string, wanted: string) =>
    eventually(async () => {
      const record = (await call(server, admin, 'GET', `${V}/${kind}/${id}`, undefined, LATEST)).body[kind.slice(0, -1)]
      return record?.status === wanted ? record : undefined
    }, 60_000, `${kind} ${id} to be ${wanted}`)
  const create = async (body: Record<string, unknown>, headers = LATEST) => {
    const res = await call(server, admin, 'POST', `${V}/volumes`, { volume: body }, headers)
    assert.equal(res.status, 202, JSON.stringify(res.body))
    return res.body.volume.id as string
  }
  const startBackup = async (body: Record<string, unknown>) => {
    const res = await call(server, admin, 'POST', `${V}/backups`, { backup: body }, LATEST)
    assert.equal(res.status, 202, JSON.stringify(res.body))
    return res.body.backup.id as string
  }
  const restore = async (backupId: string, body: Record<string, unknown>) => {
    const res = await call(server, admin, 'POST', `${V}/backups/${backupId}/restore`, { restore: body }, LATEST)
    assert.equal(res.status, 202, JSON.stringify(res.body))
    return res.body.restore.volume_id as string
  }
  /** Nothing a copy leaves: export keys, the host's export daemons, the control plane's scratch directories. */
  const nothingLeft = async () => {
    assert.deepEqual(await server.deps.store.db.selectFrom('volume_export_keys').select('identity').execute(), [], 'no export key')
    assert.deepEqual(await server.deps.store.db.selectFrom('volume_exports').select('volume_id').execute(), [], 'no export')
    await eventually(async () => readdirSync(join(host.root, 'run/pcc/volumes')).length === 0, 20_000, "the host's export daemon to stop")
    assert.deepEqual(readdirSync(join(server.dataDir, 'volumes')).filter((n) => n.startsWith('.scratch-')), [], 'no scratch directory')
  }
  const read = async (spec: BlockdevSpec, commands: string[]) => {
    const io = await localIo(spec, commands)
    assert.ok(io.ok, io.output)
  }

  before(async () => {
    net = createTestNetwork(1)
    server = await startTestServer({ publicUrlFromListen: true, listenAddress: net.gateway, env: { PCC_VOLUME_EXPORT_ADDRESS: net.gateway, PCC_VOLUME_EXPORT_PORTS: '22850-22869' } })
    admin = await adminSession(server)
    const token = await server.deps.onboarding.createRegistrationToken(admin.userId, 3600, 'storage backup test')
    host = scratchHost({ hostname: 'store-backups', controller: server.url, registrationToken: token.token })
    agent = spawnAgent(host.root, net.hosts[0].exec)
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200, 20_000, 'registration')
    assert.equal((await call(server, admin, 'PUT', `/resmgr/v1/hosts/${host.hostId}/roles/storage`, {})).status, 200)
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).body.roles_status_details.storage === 'ok', 20_000, 'the storage role')
    const remote = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'remote', extra_specs: { volume_backend_name: 'file', 'pcc:placement': 'storage-host' } } })
    assert.equal(remote.status, 200)
  })
  after(() => closeStorageTestbed({ agent, host, server, net }))

  it("backs up a host's volume and restores it onto the host and onto the control plane", async () => {
    const source = await create({ size: 1, volume_type: 'remote', name: 'source' })
    assert.equal((await status('volumes', source, 'available'))['os-vol-host-attr:host'], 'store-backups@file#file')
    await read(fileNode(hostFile(source)), WRITTEN)

    const backupId = await startBackup({ volume_id: source, name: 'from-host' })
    const backup = await status('backups', backupId, 'available')
    assert.equal(backup.object_count, 2, 'two chunks hold bytes, the rest are zeros')
    await status('volumes', source, 'available')
    await nothingLeft()

    // A new volume on the host, made from the backup (3.47).
    const made = await create({ size: 1, volume_type: 'remote', backup_id: backupId, name: 'made' })
    assert.equal((await status('volumes', made, 'available'))['os-vol-host-attr:host'], 'store-backups@file#file')
    await read(fileNode(hostFile(made)), BACKED_UP)

    // An existing volume on the host: its old bytes are replaced, zeros included.
    const existing = await create({ size: 1, volume_type: 'remote', name: 'existing' })
    await status('volumes', existing, 'available')
    await read(fileNode(hostFile(existing)), ['write -P 0x33 0 16M'])
    assert.equal(await restore(backupId, { volume_id: existing }), existing)
    await status('volumes', existing, 'available')
    await status('backups', backupId, 'available')
    await read(fileNode(hostFile(existing)), BACKED_UP)

    // A new volume of the default type: the control plane's own file.
    const local = await restore(backupId, {})
    assert.equal((await status('volumes', local, 'available'))['os-vol-host-attr:host'], 'controller@file#file')
    await read(fileNode(controllerFile(local)), BACKED_UP)
    await nothingLeft()
  })

  it("backs up a snapshot of a host's volume: the snapshot's bytes, not the volume's later ones", async () => {
    const v = await create({ size: 1, volume_type: 'remote', name: 'snapped' })
    await status('volumes', v, 'available')
    // Patterns of their own, so that no chunk is one an earlier backup already stored (object_count counts new ones).
    await read(fileNode(hostFile(v)), ['write -P 0x66 0 1M', 'write -P 0x99 5M 1M'])
    const snap = await call(server, admin, 'POST', `${V}/snapshots`, { snapshot: { volume_id: v, name: 's' } })
    assert.equal(snap.status, 202, JSON.stringify(snap.body))
    const snapId = snap.body.snapshot.id as string
    const snapshotStatus = async () => (await call(server, admin, 'GET', `${V}/snapshots/${snapId}`)).body.snapshot.status
    await eventually(async () => (await snapshotStatus()) === 'available', 30_000, 'snapshot')
    // The volume moves on after the snapshot: the backup must not see these bytes.
    await read(fileNode(hostFile(v)), ['write -P 0x33 0 16M'])

    // A host whose agent is older than snapshot exports (protocol 5) is refused up front, and nothing is made.
    // (The agent's next heartbeat reports its real protocol again.)
    const db = server.deps.store.db
    const facts = (await db.selectFrom('hosts').select('facts').where('id', '=', host.hostId).executeTakeFirstOrThrow()).facts
    await db.updateTable('hosts').set({ facts: JSON.stringify({ ...JSON.parse(facts), protocol_version: 4 }) }).where('id', '=', host.hostId).execute()
    const old = await call(server, admin, 'POST', `${V}/backups`, { backup: { volume_id: v, snapshot_id: snapId } }, LATEST)
    await db.updateTable('hosts').set({ facts }).where('id', '=', host.hostId).execute()
    assert.equal(old.status, 400, JSON.stringify(old.body))
    assert.match(old.body.badRequest.message, /speaks protocol 4; backing up a snapshot there needs 5: upgrade it/)
    assert.equal((await call(server, admin, 'GET', `${V}/backups?volume_id=${v}`, undefined, LATEST)).body.backups.length, 0)

    const backupId = await startBackup({ volume_id: v, snapshot_id: snapId, name: 'of-snapshot' })
    const backup = await status('backups', backupId, 'available')
    assert.equal(backup.snapshot_id, snapId)
    assert.equal(backup.object_count, 2, "the snapshot's two chunks with bytes, not the volume's four")
    assert.equal(await snapshotStatus(), 'available', 'the snapshot is back to available')
    await read(fileNode(hostFile(v)), ['read -P 0x33 0 16M'])
    await nothingLeft()

    const made = await create({ size: 1, volume_type: 'remote', backup_id: backupId, name: 'from-snapshot-backup' })
    assert.equal((await status('volumes', made, 'available'))['os-vol-host-attr:host'], 'store-backups@file#file')
    await read(fileNode(hostFile(made)), ['read -P 0x66 0 1M', 'read -P 0 1M 4M', 'read -P 0x99 5M 1M', 'read -P 0 6M 10M'])
    await nothingLeft()
  })

  it('leaves no key, daemon or scratch file behind when the copy fails', async () => {
    // A volume whose bytes vanished from the host: its export cannot open them, so neither copy can run.
    const lost = await create({ size: 1, volume_type: 'remote', name: 'lost' })
    await status('volumes', lost, 'available')
    rmSync(hostFile(lost))
    const backupId = await startBackup({ volume_id: lost })
    const failed = await status('backups', backupId, 'error')
    assert.match(failed.fail_reason, /did not start/, 'the backup says why')
    await status('volumes', lost, 'available')
    await nothingLeft()

    const good = await startBackup({ volume_id: (await status('volumes', await create({ size: 1, volume_type: 'remote' }), 'available')).id })
    await status('backups', good, 'available')
    await restore(good, { volume_id: lost })
    await status('volumes', lost, 'error_restoring')
    await status('backups', good, 'available')
    await nothingLeft()
  })
})
