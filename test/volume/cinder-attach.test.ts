/**
 * Cinder's legacy attachment actions (os-attach, os-detach, os-force_detach) against servers built through
 * compute (simulated hosts, conductor running): a record of the volume attached to an instance at a mountpoint,
 * shown in the volume's attachments; detach and an admin's force detach take it away; an attachment compute made
 * is left to compute; bad input, another project's server or volume and a non-admin's force detach change
 * nothing. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { bootServer, call, computeTestbed, newVolume as newVolumeOf, volumeCall, type ComputeTestbed, type Persona } from '../compute/helpers.js'

for (const dialect of DIALECTS) {
  describe(`Cinder attach actions (${dialect})`, () => {
    let tb: ComputeTestbed
    let serverId: string
    const volumeApi = (who: Persona, method: string, path: string, body?: unknown) => volumeCall(tb, who, method, path, body)
    const action = (who: Persona, id: string, body: unknown) => volumeApi(who, 'POST', `/volumes/${id}/action`, body)
    const show = async (id: string) => (await volumeApi(tb.member, 'GET', `/volumes/${id}`)).body.volume
    const newVolume = () => newVolumeOf(tb, tb.member)
    const boot = (who: Persona, name: string) => bootServer(tb, who, name)

    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '10' }, true)
      serverId = await boot(tb.member, 'vm')
    })
    after(() => tb.close())

    it('records an attachment to an instance and takes it away with os-detach', async () => {
      const id = await newVolume()
      assert.equal((await action(tb.member, id, { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdb' } })).status, 202)
      const attached = await show(id)
      assert.equal(attached.status, 'in-use')
      assert.equal(attached.attachments.length, 1)
      const [a] = attached.attachments
      assert.deepEqual([a.id, a.volume_id, a.server_id, a.device], [id, id, serverId, '/dev/vdb'])
      assert.ok(a.attachment_id)
      const listed = await fetch(`${tb.server.url}/volume/v3/attachments/${a.attachment_id}`, { headers: { 'x-auth-token': tb.member.token, 'openstack-api-version': 'volume 3.27' } })
      assert.equal(listed.status, 200, 'the attachments API shows it')
      assert.equal((await action(tb.member, id, { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdc' } })).status, 400, 'attached already')
      assert.equal((await action(tb.member, id, { 'os-detach': { attachment_id: 'nope' } })).status, 404)
      assert.equal((await action(tb.member, id, { 'os-detach': {} })).status, 202)
      const detached = await show(id)
      assert.equal(detached.status, 'available')
      assert.deepEqual(detached.attachments, [])
      assert.equal((await action(tb.member, id, { 'os-detach': {} })).status, 202, 'nothing attached: nothing to do, as Cinder')
      assert.equal((await show(id)).status, 'available')
    })

    it('refuses bad input, unknown volumes and other projects’ servers and volumes; nothing changes', async () => {
      const id = await newVolume()
      const bad: unknown[] = [
        { 'os-attach': { instance_uuid: serverId } },
        { 'os-attach': { mountpoint: '/dev/vdb' } },
        { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdb', mode: 'rx' } },
        { 'os-attach': { instance_uuid: 42, mountpoint: '/dev/vdb' } },
        { 'os-attach': { host_name: 'somewhere', mountpoint: '/dev/vdb' } },
      ]
      for (const body of bad) assert.equal((await action(tb.member, id, body)).status, 400, JSON.stringify(body))
      assert.equal((await action(tb.member, id, { 'os-attach': { instance_uuid: '00000000-0000-0000-0000-000000000000', mountpoint: '/dev/vdb' } })).status, 404, 'no such instance')
      const theirs = await boot(tb.other, 'theirs')
      assert.equal((await action(tb.member, id, { 'os-attach': { instance_uuid: theirs, mountpoint: '/dev/vdb' } })).status, 404, "another project's instance")
      assert.equal((await action(tb.other, id, { 'os-attach': { instance_uuid: theirs, mountpoint: '/dev/vdb' } })).status, 404, "another project's volume")
      assert.equal((await action(tb.reader, id, { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdb' } })).status, 403, 'readers do not attach')
      assert.equal((await action(tb.member, '00000000-0000-0000-0000-000000000000', { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdb' } })).status, 404)
      assert.equal((await action(tb.member, 'xxx', { 'os-detach': {} })).status, 404)
      const after = await show(id)
      assert.equal(after.status, 'available')
      assert.deepEqual(after.attachments, [])
    })

    it('lets an admin force-detach a record whatever the volume status; members may not', async () => {
      const id = await newVolume()
      assert.equal((await action(tb.member, id, { 'os-attach': { instance_uuid: serverId, mountpoint: '/dev/vdb' } })).status, 202)
      const attachmentId = (await show(id)).attachments[0].attachment_id
      assert.equal((await action(tb.admin, id, { 'os-reset_status': { status: 'error' } })).status, 202)
      assert.equal((await action(tb.member, id, { 'os-force_detach': { attachment_id: attachmentId } })).status, 403)
      assert.equal((await show(id)).attachments.length, 1)
      assert.equal((await action(tb.admin, id, { 'os-force_detach': { attachment_id: attachmentId, connector: null } })).status, 202)
      const freed = await show(id)
      assert.equal(freed.status, 'available')
      assert.deepEqual(freed.attachments, [])
      // With no record to remove, only an attach status is undone: a volume in error (its bytes may be missing) stays so.
      assert.equal((await action(tb.admin, id, { 'os-reset_status': { status: 'error' } })).status, 202)
      assert.equal((await action(tb.admin, id, { 'os-force_detach': {} })).status, 202)
      assert.equal((await show(id)).status, 'error')
    })

    it('leaves an attachment compute made to compute, and a server deleted takes its Cinder records with it', async () => {
      const viaCompute = await newVolume()
      assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: viaCompute } }, '2.96')).status, 200)
      await until('compute attachment in-use', 30_000, async () => ((await show(viaCompute)).status === 'in-use' ? true : undefined))
      const refused = await action(tb.member, viaCompute, { 'os-detach': {} })
      assert.equal(refused.status, 400)
      assert.match(refused.body.badRequest.message, /through compute/)
      assert.equal((await action(tb.admin, viaCompute, { 'os-force_detach': {} })).status, 400)
      assert.equal((await show(viaCompute)).status, 'in-use')
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-volume_attachments/${viaCompute}`, undefined, '2.96')).status, 202)
      await until('compute detach done', 30_000, async () => ((await show(viaCompute)).status === 'available' ? true : undefined))

      const doomed = await boot(tb.member, 'doomed')
      const recorded = await newVolume()
      assert.equal((await action(tb.member, recorded, { 'os-attach': { instance_uuid: doomed, mountpoint: '/dev/vdb' } })).status, 202)
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${doomed}`, undefined, '2.96')).status, 204)
      await until('the record released with the server', 60_000, async () => {
        const v = await show(recorded)
        return v.status === 'available' && v.attachments.length === 0 ? true : undefined
      })
    })
  })
}
