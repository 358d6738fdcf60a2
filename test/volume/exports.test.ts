/**
 * The control plane's own volumes exported to hypervisors: an attachment connected for a host gets a TLS-PSK key
 * on the volume's NBD export (one qemu-storage-daemon per volume, started by pcc-server), a client in another
 * network namespace reads and writes the volume's real bytes with that key and nothing else, the export survives
 * a control-plane restart (adopted, same daemon, same bytes), and detaching stops it. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { localIo, nbdIo } from '../../src/testkit/nbd.js'
import { daemonPid, ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { daemonFiles } from '../../src/host/storage/exports/qsd-command.js'
import type { NbdSource } from '../../src/contracts/host/volume.js'
import type { VolumeConnectionInfo } from '../../src/contracts/host/compute-driver.js'
import { call, eventually, projectSession, type Session } from '../image/support.js'

const V = '/volume/v3'

function nbd(info: VolumeConnectionInfo): NbdSource {
  assert.ok(info.driver_volume_type === 'nbd', 'a file volume is reached over NBD')
  return { host: info.data.host, port: info.data.port, export: info.data.export, pskIdentity: info.data.psk_identity, pskKey: info.data.psk_key ?? '' }
}

for (const dialect of DIALECTS) {
  describe(`volume exports of the control plane (${dialect})`, () => {
    let net: TestNetwork
    let server: TestServer
    let alice: Session
    let dataDir: string
    const client = () => ({ exec: net.hosts[0].exec })

    const start = async (reuse?: { dataDir: string; databaseUrl: string }) =>
      startTestServer({ dialect, listenAddress: net.gateway, ...(reuse ?? {}), env: { PCC_VOLUME_EXPORT_ADDRESS: net.gateway, PCC_VOLUME_EXPORT_PORTS: '21810-21829' } })

    before(async () => {
      net = createTestNetwork(1)
      server = await start()
      dataDir = server.dataDir
      alice = await projectSession(server)
    })
    after(async () => {
      await new ExportManager(join(dataDir, 'run', 'volumes')).stopAll()
      await server?.close()
      // The restarted server was given the data dir, so it leaves it: it goes here.
      rmSync(dataDir, { recursive: true, force: true })
      net?.close()
    })

    it('connects an attachment for a host, serves it over NBD with its key only, keeps it across a restart, stops it on detach', async () => {
      const created = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'data' } })
      const volumeId = created.body.volume.id as string
      await eventually(async () => (await call(server, alice, 'GET', `${V}/volumes/${volumeId}`)).body.volume.status === 'available', 10_000, 'available')
      const file = join(dataDir, 'volumes', `volume-${volumeId}`)
      assert.ok(existsSync(file), 'the bytes are a file in the data dir')

      const serverId = randomUUID()
      const { volumes, connections } = server.deps.volumeServices
      const db = server.deps.store.db
      const { attachmentId } = await db.transaction().execute((tx) => volumes.reserveForAttach(tx, { volumeId, projectId: alice.projectId, serverId }))
      const info = await volumes.connect({ volumeId, serverId, hostId: 'host-a' })
      assert.equal(info.driver_volume_type, 'nbd')
      assert.equal(info.data.host, net.gateway)
      assert.ok(info.data.port >= 21810 && info.data.port <= 21829)
      assert.equal(info.data.export, `volume-${volumeId}`)
      assert.equal(info.data.psk_identity, `att-${attachmentId}`)
      assert.equal(info.data.psk_key, undefined, 'the key is not in what commands carry')
      assert.deepEqual(await volumes.connect({ volumeId, serverId, hostId: 'host-a' }), info, 'connecting again changes nothing')

      await assert.rejects(connections.forHost('host-b', attachmentId), /not connected on host/)
      const keyed = await connections.forHost('host-a', attachmentId)
      assert.ok(keyed.driver_volume_type === 'nbd')
      assert.match(keyed.data.psk_key!, /^[0-9a-f]{64}$/)

      await db.transaction().execute((tx) => volumes.attach(tx, { volumeId, serverId, device: '/dev/vdb', hostName: 'host-a' }))
      const shown = await call(server, alice, 'GET', `${V}/attachments/${attachmentId}`, undefined, { 'openstack-api-version': 'volume 3.27' })
      assert.equal(shown.body.attachment.connection_info.data.export, info.data.export)
      assert.equal(shown.body.attachment.connection_info.data.psk_key, undefined, 'users never see the key')

      const wrote = await nbdIo(nbd(keyed), ['write -P 0x4b 3M 1M', 'flush'], client())
      assert.ok(wrote.ok, wrote.output)
      assert.ok((await localIo({ driver: 'raw', file: { driver: 'file', filename: file } }, ['read -P 0x4b 3M 1M'])).ok, 'the bytes landed in the volume file')
      assert.equal((await nbdIo({ ...nbd(keyed), pskKey: 'ab'.repeat(32) }, ['read 0 4k'], client())).ok, false, 'a wrong key is refused')
      assert.equal((await nbdIo(nbd(keyed), ['read 0 4k'], { ...client(), tls: false })).ok, false, 'plain NBD is refused')

      // A control-plane restart: the daemon outlives pcc-server and is adopted; the client's key still works.
      const pidFile = daemonFiles(join(dataDir, 'run', 'volumes', volumeId)).pid
      const pid = daemonPid(pidFile)
      assert.ok(pid)
      const databaseUrl = server.config.databaseUrl
      await server.stop()
      server = await start({ dataDir, databaseUrl })
      assert.equal(daemonPid(pidFile), pid, 'the same daemon serves on')
      const again = await nbdIo(nbd(keyed), ['read -P 0x4b 3M 1M'], client())
      assert.ok(again.ok, again.output)

      await server.deps.store.db.transaction().execute(async (tx) => {
        await server.deps.volumeServices.volumes.beginDetach(tx, { volumeId, serverId })
        await server.deps.volumeServices.volumes.detach(tx, { volumeId, serverId })
      })
      server.deps.runner.wake()
      await eventually(async () => daemonPid(pidFile) === undefined && readdirSync(join(dataDir, 'run', 'volumes')).length === 0, 10_000, 'the daemon to stop and its files to go')
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${volumeId}`)).body.volume.status, 'available')
      assert.equal((await nbdIo(nbd(keyed), ['read 0 4k'], client())).ok, false, 'nothing listens any more')
    })
  })
}
