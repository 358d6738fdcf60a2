/**
 * Cinder's attachments API (3.27+) for a consumer other than compute: `openstack volume attachment create
 * --connect` reserves the volume for an instance and connects it, and the connection info it answers opens the
 * volume's real bytes over NBD with the export's key; os-complete makes it in use; delete stops the export and the
 * volume is available again. Without a connector it is only reserved until a PUT connects it. Bad input, other
 * projects, readers, microversions below each call's and compute's own attachments are refused with nothing
 * changed. On SQLite and PostgreSQL, against servers built through compute on simulated hosts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { DIALECTS } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { localIo, nbdIo } from '../../src/testkit/nbd.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import type { NbdSource } from '../../src/contracts/host/volume.js'
import { bootServer, call, computeTestbed, newVolume as newVolumeOf, volumeCall, type ComputeTestbed, type Persona } from '../compute/helpers.js'

const V354 = { 'openstack-api-version': 'volume 3.54' }

/** The NBD source a consumer reads from an attachment's connection info. */
function nbdSource(info: { driver_volume_type: string; data: Record<string, unknown> }): NbdSource {
  assert.equal(info.driver_volume_type, 'nbd', 'a file volume is reached over NBD')
  const d = info.data
  return { host: String(d.host), port: Number(d.port), export: String(d.export), pskIdentity: String(d.psk_identity), pskKey: String(d.psk_key) }
}

for (const dialect of DIALECTS) {
  describe(`volume attachments API (${dialect})`, () => {
    let tb: ComputeTestbed
    let serverId: string
    let adminServerId: string
    const api = (who: Persona, method: string, path: string, body?: unknown, headers: Record<string, string> = V354) => volumeCall(tb, who, method, path, body, headers)
    const volume = async (id: string) => (await api(tb.admin, 'GET', `/volumes/${id}`)).body.volume
    const newVolume = (who: Persona, extra: Record<string, unknown> = {}) => newVolumeOf(tb, who, extra)
    const boot = (who: Persona, name: string) => bootServer(tb, who, name)

    before(async () => {
      // Ports of their own: other test files serve exports at the same time.
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '10', PCC_VOLUME_EXPORT_PORTS: '22810-22829' }, true, { publicUrlFromListen: true })
      serverId = await boot(tb.member, 'vm')
      adminServerId = await boot(tb.admin, 'admin-vm')
    })
    after(async () => {
      // Export daemons outlive pcc-server by design (a restarted one adopts them): a test stops what it left.
      await new ExportManager(join(tb.server.dataDir, 'run', 'volumes')).stopAll()
      await tb.close()
    })

    it('openstack volume attachment create --connect: the consumer reads and writes the bytes with the key it got; complete; delete stops the export', async () => {
      const volumeId = await newVolume(tb.admin)
      const env = { ...adminEnv(tb.server), OS_VOLUME_API_VERSION: '3.54' }
      const created = await openstackJson<Record<string, unknown>>(['volume', 'attachment', 'create', volumeId, adminServerId, '--connect', '--host', 'consumer-1', '--mountpoint', '/dev/vdb', '--mode', 'rw'], env)
      assert.equal(created.Status, 'attaching')
      assert.equal(created['Attach Mode'], 'rw')
      const info = created.Properties as { driver_volume_type: string; data: Record<string, unknown> }
      assert.equal(info.data.access_mode, 'rw')
      assert.match(String(info.data.psk_key), /^[0-9a-f]{64}$/, 'the consumer gets the key, as Cinder answers a target with its credentials')
      const attachmentId = String(created.ID)
      assert.equal((await volume(volumeId)).status, 'attaching')

      const source = nbdSource(info)
      const wrote = await nbdIo(source, ['write -P 0x5a 1M 1M', 'flush'])
      assert.ok(wrote.ok, wrote.output)
      const file = join(tb.server.dataDir, 'volumes', `volume-${volumeId}`)
      assert.ok((await localIo({ driver: 'raw', file: { driver: 'file', filename: file } }, ['read -P 0x5a 1M 1M'])).ok, 'the bytes landed in the volume')
      assert.equal((await nbdIo(source, ['read 0 4k'], { key: 'cd'.repeat(32) })).ok, false, 'another key is refused')

      const completed = await openstack(['volume', 'attachment', 'complete', attachmentId], env)
      assert.equal(completed.code, 0, completed.stderr)
      const done = await volume(volumeId)
      assert.equal(done.status, 'in-use')
      assert.deepEqual(done.attachments.map((a: { attachment_id: string; server_id: string; device: string }) => [a.attachment_id, a.server_id, a.device]), [[attachmentId, adminServerId, '/dev/vdb']])
      const shown = await api(tb.admin, 'GET', `/attachments/${attachmentId}`)
      assert.equal(shown.body.attachment.status, 'attached')
      assert.equal(shown.body.attachment.connection_info.data.export, info.data.export)
      assert.equal(shown.body.attachment.connection_info.data.psk_key, undefined, 'the key is answered to the consumer once, never shown again')

      const deleted = await api(tb.admin, 'DELETE', `/attachments/${attachmentId}`)
      assert.equal(deleted.status, 200)
      assert.deepEqual(deleted.body.attachments, [])
      assert.equal((await volume(volumeId)).status, 'available')
      tb.server.deps.runner.wake()
      await until('the export to stop', 15_000, async () => ((await nbdIo(source, ['read 0 4k'])).ok ? undefined : true))
      assert.ok(existsSync(file), 'the volume itself stays')
    })

    it('reserves without a connector, connects on update, and a second reservation of a single-attach volume is refused', async () => {
      const volumeId = await newVolume(tb.member)
      const reserved = await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId, connector: {} } })
      assert.equal(reserved.status, 200, JSON.stringify(reserved.body))
      const attachmentId = reserved.body.attachment.id as string
      assert.equal(reserved.body.attachment.status, 'reserved')
      assert.equal(reserved.body.attachment.connection_info, null)
      assert.equal((await volume(volumeId)).status, 'reserved')
      const twice = await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId } })
      assert.equal(twice.status, 400, 'reserved already')

      const connected = await api(tb.member, 'PUT', `/attachments/${attachmentId}`, { attachment: { connector: { host: 'consumer-2', initiator: 'iqn.x' } } })
      assert.equal(connected.status, 200, JSON.stringify(connected.body))
      assert.equal(connected.body.attachment.status, 'attaching')
      const again = await api(tb.member, 'PUT', `/attachments/${attachmentId}`, { attachment: { connector: { host: 'consumer-2' } } })
      assert.equal(again.body.attachment.connection_info.data.psk_key, connected.body.attachment.connection_info.data.psk_key, 'connecting again answers the same export and key')
      const read = await nbdIo(nbdSource(connected.body.attachment.connection_info), ['read -P 0 0 64k'])
      assert.ok(read.ok, read.output)

      assert.equal((await api(tb.member, 'POST', `/attachments/${attachmentId}/action`, { 'os-complete': null })).status, 204)
      assert.equal((await api(tb.member, 'POST', `/attachments/${attachmentId}/action`, { 'os-complete': null })).status, 204, 'completing again changes nothing')
      assert.equal((await volume(volumeId)).status, 'in-use')
      assert.equal((await api(tb.member, 'DELETE', `/attachments/${attachmentId}`)).status, 200)
      assert.equal((await volume(volumeId)).status, 'available')
    })

    it('refuses bad input, other projects, readers, low microversions and compute’s attachments; nothing changes', async () => {
      const volumeId = await newVolume(tb.member)
      const bad: [unknown, Record<string, string>, number][] = [
        [{ attachment: { volume_uuid: volumeId, instance_uuid: serverId } }, { 'openstack-api-version': 'volume 3.26' }, 404],
        [{ attachment: { volume_uuid: volumeId, instance_uuid: serverId, mode: 'ro' } }, { 'openstack-api-version': 'volume 3.53' }, 400],
        [{ attachment: { volume_uuid: volumeId, instance_uuid: serverId, mode: 'rx' } }, V354, 400],
        [{ attachment: { volume_uuid: volumeId } }, V354, 400],
        [{ attachment: { instance_uuid: serverId } }, V354, 400],
        [{ attachment: { volume_uuid: volumeId, instance_uuid: serverId, connector: 'host' } }, V354, 400],
        [{ volume_uuid: volumeId }, V354, 400],
        [{ attachment: { volume_uuid: volumeId, instance_uuid: adminServerId } }, V354, 404],
        [{ attachment: { volume_uuid: 'no-such-volume', instance_uuid: serverId } }, V354, 404],
      ]
      for (const [body, headers, status] of bad) {
        const r = await api(tb.member, 'POST', '/attachments', body, headers)
        assert.equal(r.status, status, `${JSON.stringify(body)} ${JSON.stringify(headers)}: ${JSON.stringify(r.body)}`)
        if (status === 400) assert.ok(r.body.badRequest?.message, 'Cinder’s error shape')
      }
      assert.equal((await api(tb.other, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId } })).status, 404, 'another project’s volume does not exist for it')
      assert.equal((await api(tb.reader, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId } })).status, 403)
      assert.equal((await volume(volumeId)).status, 'available', 'nothing changed')

      const readonly = await newVolume(tb.member, { metadata: { readonly: 'True' } })
      assert.equal((await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: readonly, instance_uuid: serverId, mode: 'rw' } })).status, 400, 'a read-only volume attaches ro only')
      const ro = await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: readonly, instance_uuid: serverId, mode: 'ro' } })
      assert.equal(ro.status, 200)
      assert.equal(ro.body.attachment.attach_mode, 'ro')

      const reserved = (await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId } })).body.attachment.id as string
      assert.equal((await api(tb.other, 'PUT', `/attachments/${reserved}`, { attachment: { connector: { host: 'x' } } })).status, 404)
      assert.equal((await api(tb.other, 'DELETE', `/attachments/${reserved}`)).status, 404)
      assert.equal((await api(tb.reader, 'DELETE', `/attachments/${reserved}`)).status, 403)
      assert.equal((await api(tb.member, 'POST', `/attachments/${reserved}/action`, { 'os-complete': null }, { 'openstack-api-version': 'volume 3.43' })).status, 404, 'os-complete is 3.44')
      assert.equal((await api(tb.member, 'POST', `/attachments/${reserved}/action`, { 'os-nope': null })).status, 400)
      assert.equal((await api(tb.member, 'PUT', `/attachments/${reserved}`, { attachment: {} })).status, 400, 'a connector is required')
      assert.equal((await api(tb.member, 'DELETE', '/attachments/no-such-attachment')).status, 404)
      assert.equal((await volume(volumeId)).status, 'reserved', 'still only reserved')
      assert.equal((await api(tb.member, 'DELETE', `/attachments/${reserved}`)).status, 200)

      // The export cannot listen (its port taken): 503, and the reservation goes with the failed create.
      const blocker = createServer()
      await until('the first export port to be free', 15_000, () => new Promise<true | undefined>((resolve) => {
        blocker.once('error', () => resolve(undefined))
        blocker.listen(22810, '127.0.0.1', () => resolve(true))
      }))
      try {
        const unserved = await api(tb.member, 'POST', '/attachments', { attachment: { volume_uuid: volumeId, instance_uuid: serverId, connector: { host: 'c' } } })
        assert.equal(unserved.status, 503, JSON.stringify(unserved.body))
        assert.match(unserved.body.serviceUnavailable?.message ?? JSON.stringify(unserved.body), /try again later/)
        const after = await volume(volumeId)
        assert.deepEqual([after.status, after.attachments], ['available', []], 'nothing left of the failed create')
      } finally {
        await new Promise((resolve) => blocker.close(resolve))
      }

      // An attachment compute made is compute's to undo.
      const computeVolume = await newVolume(tb.member)
      const attached = await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: computeVolume } }, '2.96')
      assert.equal(attached.status, 200, JSON.stringify(attached.body))
      await until('compute’s attachment', 30_000, async () => ((await volume(computeVolume)).status === 'in-use' ? true : undefined))
      const computeAttachment = (await volume(computeVolume)).attachments[0].attachment_id as string
      const refused = await api(tb.member, 'DELETE', `/attachments/${computeAttachment}`)
      assert.equal(refused.status, 400)
      assert.match(refused.body.badRequest.message, /through compute/)
      assert.equal((await volume(computeVolume)).status, 'in-use')
    })
  })
}
