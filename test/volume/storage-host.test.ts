/**
 * A storage host: a real pcc-agent in its own network namespace takes the `storage` role and holds volumes of a
 * type placed there, with real bytes in its root — from an image, snapshots that keep their moment, retype to
 * the control plane and back (the bytes move over NBD), upload to an image. An attachment's export is served by
 * the agent's qemu-storage-daemon and read from a third namespace with the attachment's key; the host endpoints
 * answer only the host's own credential. A storage host that is DOWN keeps its volumes; one whose role is
 * forcibly removed puts them in error.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { agentConfig, closeStorageTestbed, killAgent, scratchHost, spawnAgent, type ScratchHost } from '../../src/testkit/agent.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { qcow2Image } from '../../src/testkit/disk-images.js'
import { localIo, nbdIo } from '../../src/testkit/nbd.js'
import type { BlockdevSpec } from '../../src/contracts/host/volume.js'
import { adminSession, call, eventually, type Session } from '../image/support.js'

const V = '/volume/v3'
const MIB = 1024 * 1024
const fileNode = (path: string): BlockdevSpec => ({ driver: 'raw', file: { driver: 'file', filename: path } })

describe('a storage host holds volumes with real bytes and exports them', () => {
  let net: TestNetwork
  let server: TestServer
  let admin: Session
  let host: ScratchHost
  let agent: ChildProcess
  const volumeFile = (id: string) => join(host.root, 'var/lib/pcc/volumes', `volume-${id}`)

  const volume = async (id: string) => (await call(server, admin, 'GET', `${V}/volumes/${id}`)).body.volume
  const settle = (id: string, status = 'available') =>
    eventually(async () => {
      const v = await volume(id)
      if (v.status === 'error' && status !== 'error') {
        const row = await server.deps.store.db.selectFrom('volumes').select('status_reason').where('id', '=', id).executeTakeFirst()
        const db = server.deps.store.db
        const state = { hosts: await db.selectFrom('hosts').select(['id', 'last_heartbeat_at', 'forced_down']).execute(), now: Date.now(), roles: await db.selectFrom('host_roles').selectAll().execute(), storage: await db.selectFrom('storage_hosts').selectAll().execute() }
        throw new Error(`volume ${id} went to error: ${row?.status_reason} ${JSON.stringify(state)}`)
      }
      return v.status === status ? v : undefined
    }, 60_000, `volume ${id} to be ${status}`)
  const create = async (body: Record<string, unknown>) => {
    const res = await call(server, admin, 'POST', `${V}/volumes`, { volume: body })
    assert.equal(res.status, 202, JSON.stringify(res.body))
    return res.body.volume.id as string
  }
  const hostCall = (hostId: string, path: string, credential = agentConfig(host.root).credential as string) =>
    fetch(`${server.url}/resmgr/v1/hosts/${hostId}${path}`, { headers: { authorization: `Bearer ${credential}` } })

  before(async () => {
    net = createTestNetwork(2)
    server = await startTestServer({ publicUrlFromListen: true, listenAddress: net.gateway, env: { PCC_VOLUME_EXPORT_ADDRESS: net.gateway, PCC_VOLUME_EXPORT_PORTS: '22810-22829', PCC_HOST_DOWN_AFTER_SECONDS: '20' } })
    admin = await adminSession(server)
    const token = await server.deps.onboarding.createRegistrationToken(admin.userId, 3600, 'storage test')
    host = scratchHost({ hostname: 'store1', controller: server.url, registrationToken: token.token })
    agent = spawnAgent(host.root, net.hosts[0].exec)
  })
  after(() => closeStorageTestbed({ agent, host, server, net }))

  it('takes the storage role and reports where it exports and what it can hold', async () => {
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200, 20_000, 'registration')
    assert.equal((await call(server, admin, 'PUT', `/resmgr/v1/hosts/${host.hostId}/roles/storage`, {})).status, 200)
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).body.roles_status_details.storage === 'ok', 20_000, 'the storage role')
    const report = await server.deps.store.db.selectFrom('storage_hosts').selectAll().where('host_id', '=', host.hostId).executeTakeFirstOrThrow()
    assert.equal(report.export_address, net.hosts[0].address, 'the address it reaches the control plane from')
    assert.ok((JSON.parse(report.backends) as Record<string, { free_gb: number }>).file.free_gb > 1)
    const services = await call(server, admin, 'GET', `${V}/os-services`)
    assert.ok(services.body.services.some((s: { host: string; state: string }) => s.host === 'store1@file' && s.state === 'up'))
  })

  it('creates, snapshots, clones, retypes and uploads volumes with their bytes on the host', async () => {
    const remote = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'remote', extra_specs: { volume_backend_name: 'file', 'pcc:placement': 'storage-host' } } })
    assert.equal(remote.status, 200)
    const image = (await call(server, admin, 'POST', '/image/v2/images', { name: 'patterned', disk_format: 'qcow2', container_format: 'bare' })).body
    const put = await call(server, admin, 'PUT', `/image/v2/images/${image.id}/file`, qcow2Image(64 * MIB, { offset: MIB, length: MIB, byte: 0x7e }), { 'content-type': 'application/octet-stream' })
    assert.equal(put.status, 204)

    const a = await create({ size: 1, imageRef: image.id, volume_type: 'remote', name: 'a' })
    const shown = await settle(a)
    // Named as `openstack volume service list` names the host (<hostname>@<backend>), so tools can join the two.
    assert.equal(shown['os-vol-host-attr:host'], 'store1@file#file')
    const services = (await call(server, admin, 'GET', `${V}/os-services`)).body.services as { host: string }[]
    assert.ok(services.some((s) => s.host === String(shown['os-vol-host-attr:host']).split('#')[0]))
    assert.ok((await localIo(fileNode(volumeFile(a)), ['read -P 0x7e 1M 1M', 'read -P 0 0 1M'])).ok, "the image's bytes are in the host's file")

    const snap = (await call(server, admin, 'POST', `${V}/snapshots`, { snapshot: { volume_id: a, name: 's' } })).body.snapshot.id as string
    await eventually(async () => (await call(server, admin, 'GET', `${V}/snapshots/${snap}`)).body.snapshot.status === 'available', 30_000, 'snapshot')
    assert.ok((await localIo(fileNode(volumeFile(a)), ['write -P 0x22 1M 1M'])).ok)
    const b = await create({ snapshot_id: snap, name: 'b' })
    await settle(b)
    assert.ok((await localIo(fileNode(volumeFile(b)), ['read -P 0x7e 1M 1M'])).ok, "the snapshot's moment, not the volume's present")

    // Retype to the control plane's file backend: the bytes cross over NBD, the host's copy goes.
    assert.equal((await call(server, admin, 'POST', `${V}/volumes/${b}/action`, { 'os-retype': { new_type: '__DEFAULT__' } })).status, 400, 'moving bytes needs on-demand')
    assert.equal((await call(server, admin, 'POST', `${V}/volumes/${b}/action`, { 'os-retype': { new_type: '__DEFAULT__', migration_policy: 'on-demand' } })).status, 202)
    const moved = await settle(b)
    assert.equal(moved.volume_type, '__DEFAULT__')
    assert.equal(moved['os-vol-host-attr:host'], 'controller@file#file')
    assert.ok((await localIo(fileNode(join(server.dataDir, 'volumes', `volume-${b}`)), ['read -P 0x7e 1M 1M'])).ok)
    assert.equal(existsSync(volumeFile(b)), false)
    await eventually(async () => readdirSync(join(host.root, 'run/pcc/volumes')).length === 0, 10_000, "the host's copy export to go")

    // Upload the host's volume to an image: its present bytes.
    const up = await call(server, admin, 'POST', `${V}/volumes/${a}/action`, { 'os-volume_upload_image': { image_name: 'from-a', disk_format: 'raw' } })
    assert.equal(up.status, 202, JSON.stringify(up.body))
    const imageId = up.body['os-volume_upload_image'].image_id as string
    await eventually(async () => (await call(server, admin, 'GET', `/image/v2/images/${imageId}`)).body.status === 'active', 60_000, 'the uploaded image')
    await settle(a)
    const bytes = Buffer.from(await (await fetch(`${server.url}/image/v2/images/${imageId}/file`, { headers: { 'x-auth-token': admin.token } })).arrayBuffer())
    assert.equal(bytes.length, 1024 * MIB)
    assert.ok(bytes.subarray(MIB, 2 * MIB).every((x) => x === 0x22) && bytes.subarray(0, MIB).every((x) => x === 0))
  })

  it("exports an attached volume from the host to a hypervisor's key only; the endpoints answer only the host", async () => {
    // The gigabyte the last test read back went through this process (the server runs in it): on a loaded machine
    // the host's heartbeats may have waited long enough for the scheduler to take it as DOWN for a moment.
    await eventually(async () => {
      const beat = await server.deps.store.db.selectFrom('hosts').select('last_heartbeat_at').where('id', '=', host.hostId).executeTakeFirstOrThrow()
      return beat.last_heartbeat_at !== null && Date.now() - beat.last_heartbeat_at < 5_000
    }, 60_000, 'the storage host to heartbeat again')
    const v = await create({ size: 1, volume_type: 'remote', name: 'attached' })
    await settle(v)
    const serverId = randomUUID()
    const { volumes, connections } = server.deps.volumeServices
    const { attachmentId } = await server.deps.store.db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId: v, projectId: admin.projectId, serverId }))
    const info = await volumes.connect({ volumeId: v, serverId, hostId: 'hypervisor-1' })
    assert.ok(info.driver_volume_type === 'nbd')
    assert.equal(info.data.host, net.hosts[0].address, "the storage host's own address")
    const keyed = await connections.forHost('hypervisor-1', attachmentId)
    assert.ok(keyed.driver_volume_type === 'nbd')
    const source = { host: keyed.data.host, port: keyed.data.port, export: keyed.data.export, pskIdentity: keyed.data.psk_identity, pskKey: keyed.data.psk_key! }
    const io = await nbdIo(source, ['write -P 0x31 0 1M', 'read -P 0x31 0 1M', 'flush'], { exec: net.hosts[1].exec })
    assert.ok(io.ok, io.output)
    assert.ok((await localIo(fileNode(volumeFile(v)), ['read -P 0x31 0 1M'])).ok)
    assert.equal((await nbdIo({ ...source, pskKey: '00'.repeat(32) }, ['read 0 4k'], { exec: net.hosts[1].exec })).ok, false)

    const own = await hostCall(host.hostId, '/storage/exports')
    assert.equal(own.status, 200)
    assert.ok(((await own.json()) as { exports: { volume_id: string }[] }).exports.some((e) => e.volume_id === v))
    assert.equal((await hostCall('0b0e6e1f-1a2b-4c3d-8e9f-000000000001', '/storage/exports')).status, 403, "another host's id")
    assert.equal((await fetch(`${server.url}/resmgr/v1/hosts/${host.hostId}/storage/exports`, { headers: { 'x-auth-token': admin.token } })).status, 401, 'user tokens are not host credentials')
    assert.equal((await hostCall(host.hostId, `/volume-connections/${attachmentId}`)).status, 404, 'the storage host is not the hypervisor of the attachment')

    await server.deps.store.db.transaction().execute((tx) => volumes.detach(tx, { volumeId: v, serverId }))
    server.deps.runner.wake()
    await eventually(async () => readdirSync(join(host.root, 'run/pcc/volumes')).length === 0, 20_000, "the host's daemon to stop")
  })

  it('keeps the volumes of a DOWN host; a forcibly removed role puts them in error', async () => {
    const kept = await create({ size: 1, volume_type: 'remote', name: 'kept' })
    await settle(kept)
    await killAgent(agent)
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).body.info.responding === false, 40_000, 'the host DOWN')
    const orphan = await create({ size: 1, volume_type: 'remote', name: 'nowhere' })
    await settle(orphan, 'error')
    assert.equal((await volume(kept)).status, 'available', 'a DOWN host may come back')
    assert.equal((await call(server, admin, 'DELETE', `/resmgr/v1/hosts/${host.hostId}/roles/storage`)).status, 409, 'it still holds volumes')

    agent = spawnAgent(host.root, net.hosts[0].exec)
    await eventually(async () => (await call(server, admin, 'GET', `/resmgr/v1/hosts/${host.hostId}`)).body.info.responding === true, 20_000, 'the host back')
    const again = await create({ size: 1, volume_type: 'remote', name: 'again' })
    await settle(again)
    assert.equal((await call(server, admin, 'DELETE', `/resmgr/v1/hosts/${host.hostId}/roles/storage?force=true`)).status, 200)
    await settle(kept, 'error')
    await settle(again, 'error')
    // Their bytes are out of reach; deleting them removes the records.
    assert.equal((await call(server, admin, 'DELETE', `${V}/volumes/${kept}`)).status, 202)
    await eventually(async () => (await call(server, admin, 'GET', `${V}/volumes/${kept}`)).status === 404, 20_000, 'the errored volume gone')
    assert.match(readFileSync(join(host.root, 'var/log/pcc/agent.log'), 'utf8'), /storage role active/)
  })
})
