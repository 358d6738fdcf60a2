/**
 * Cinder's admin APIs over real volumes: private volume types and their project access, quota classes and
 * per-type quotas, volume services (enable, disable, freeze, thaw) and their hosts, the scheduler's pools and the
 * backends' capabilities (and types asking for others), user messages, snapshot status updates. Every refusal is checked
 * with its status and body, and that it changed nothing.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { statfsSync } from 'node:fs'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

const V = '/volume/v3'

async function waitStatus(server: TestServer, session: Session, id: string, status: string) {
  return eventually(async () => {
    const body = (await call(server, session, 'GET', `${V}/volumes/${id}`)).body.volume
    return body?.status === status ? body : undefined
  }, 10_000, `volume ${id} to be ${status}`)
}

for (const dialect of DIALECTS) {
  describe(`block storage admin APIs (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('a private volume type is usable only by the projects it is granted to', async () => {
      const created = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'gold', 'os-volume-type-access:is_public': false } })
      assert.equal(created.status, 200)
      const type = created.body.volume_type
      assert.equal(type.is_public, false)
      const names = async (s: Session) => (await call(server, s, 'GET', `${V}/types`)).body.volume_types.map((t: { name: string }) => t.name)

      // Not granted: invisible, and a volume of it is 404 (no volume made).
      assert.ok(!(await names(alice)).includes('gold'))
      assert.equal((await call(server, alice, 'GET', `${V}/types/${type.id}`)).status, 404)
      const refused = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: type.id } })
      assert.equal(refused.status, 404)
      assert.match(refused.body.itemNotFound.message, /could not be found/)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes`)).body.volumes.length, 0)

      // Granted to alice: she lists, shows and uses it; bob still does not see it.
      const grant = await call(server, admin, 'POST', `${V}/types/${type.id}/action`, { addProjectAccess: { project: alice.projectId } })
      assert.equal(grant.status, 202)
      assert.ok((await names(alice)).includes('gold'))
      assert.equal((await call(server, alice, 'GET', `${V}/types/gold`)).status, 200)
      assert.ok(!(await names(bob)).includes('gold'))
      const vol = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: type.id } })
      assert.equal(vol.status, 202)
      assert.equal(vol.body.volume.volume_type, 'gold')
      await waitStatus(server, alice, vol.body.volume.id, 'available')
      assert.equal((await call(server, bob, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: 'gold' } })).status, 404)

      await call(server, admin, 'POST', `${V}/types/${type.id}/action`, { addProjectAccess: { project: bob.projectId } })
      const list = await call(server, admin, 'GET', `${V}/types/${type.id}/os-volume-type-access`)
      assert.equal(list.status, 200)
      assert.deepEqual(list.body.volume_type_access, [
        { volume_type_id: type.id, project_id: alice.projectId },
        { volume_type_id: type.id, project_id: bob.projectId },
      ])

      // Taken back: gone for alice again; her volume keeps its type.
      assert.equal((await call(server, admin, 'POST', `${V}/types/${type.id}/action`, { removeProjectAccess: { project: alice.projectId } })).status, 202)
      assert.ok(!(await names(alice)).includes('gold'))
      assert.equal((await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: 'gold' } })).status, 404)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${vol.body.volume.id}`)).body.volume.volume_type, 'gold')
      await call(server, alice, 'DELETE', `${V}/volumes/${vol.body.volume.id}`)
    })

    it('refuses access changes that make no sense, and non-admins', async () => {
      const type = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'silver', is_public: false } })).body.volume_type
      const action = (s: Session, body: unknown) => call(server, s, 'POST', `${V}/types/${type.id}/action`, body)
      assert.equal((await action(admin, { addProjectAccess: { project: alice.projectId } })).status, 202)
      const twice = await action(admin, { addProjectAccess: { project: alice.projectId } })
      assert.equal(twice.status, 409)
      assert.match(twice.body.conflictingRequest.message, /already exists/)
      const notGranted = await action(admin, { removeProjectAccess: { project: bob.projectId } })
      assert.equal(notGranted.status, 404)
      assert.equal((await action(admin, { addProjectAccess: {} })).status, 400)
      assert.equal((await action(admin, { somethingElse: { project: bob.projectId } })).status, 400)
      assert.equal((await action(admin, { addProjectAccess: { project: bob.projectId }, removeProjectAccess: { project: bob.projectId } })).status, 400)

      // A member may neither grant nor list, even for a type granted to their project.
      assert.equal((await action(alice, { addProjectAccess: { project: bob.projectId } })).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/types/${type.id}/os-volume-type-access`)).status, 403)
      const list = await call(server, admin, 'GET', `${V}/types/${type.id}/os-volume-type-access`)
      assert.deepEqual(list.body.volume_type_access.map((g: { project_id: string }) => g.project_id), [alice.projectId])

      // A public type has no access list.
      const publicType = (await call(server, admin, 'GET', `${V}/types/default`)).body.volume_type
      const onPublic = await call(server, admin, 'POST', `${V}/types/${publicType.id}/action`, { addProjectAccess: { project: alice.projectId } })
      assert.equal(onPublic.status, 400)
      assert.match(onPublic.body.badRequest.message, /public volume type/)
      assert.equal((await call(server, admin, 'GET', `${V}/types/${publicType.id}/os-volume-type-access`)).status, 404)
      assert.equal((await call(server, admin, 'GET', `${V}/types/nope/os-volume-type-access`)).status, 404)

      // Deleting the type takes its grants with it.
      assert.equal((await call(server, admin, 'DELETE', `${V}/types/${type.id}`)).status, 202)
      assert.equal(await server.deps.store.db.selectFrom('volume_type_access').select('project_id').where('volume_type_id', '=', type.id).executeTakeFirst(), undefined)
    })

    it('the quota class default gives every project its defaults, per volume type too', async () => {
      const before = (await call(server, admin, 'GET', `${V}/os-quota-class-sets/default`)).body.quota_class_set
      assert.equal(before.id, 'default')
      assert.equal(before.volumes, 10)
      assert.equal(before.volumes___DEFAULT__, -1)
      const type = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'bronze' } })).body.volume_type
      const updated = await call(server, admin, 'PUT', `${V}/os-quota-class-sets/default`, { quota_class_set: { volumes: 3, volumes_bronze: 1, unknown_key: 5 } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.quota_class_set.volumes, 3)
      assert.equal(updated.body.quota_class_set.volumes_bronze, 1)
      assert.equal('unknown_key' in updated.body.quota_class_set, false)

      // A project nobody set quotas for gets them: its defaults, its quota set, and the check at create.
      const carol = await projectSession(server)
      const defaults = (await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}/defaults`)).body.quota_set
      assert.deepEqual([defaults.volumes, defaults.volumes_bronze], [3, 1])
      const shown = (await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}`)).body.quota_set
      assert.deepEqual([shown.volumes, shown.volumes_bronze], [3, 1])
      const first = await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: 'bronze' } })
      assert.equal(first.status, 202)
      const second = await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: type.id } })
      assert.equal(second.status, 413)
      assert.match(second.body.overLimit.message, /volumes_bronze/)
      const usage = (await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}?usage=true`)).body.quota_set
      assert.deepEqual(usage.volumes_bronze, { limit: 1, in_use: 1, reserved: 0, allocated: 0 })
      // Another type still fits under the total, which then stops the third.
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1 } })).status, 202)
      assert.equal((await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1 } })).status, 202)
      const total = await call(server, carol, 'POST', `${V}/volumes`, { volume: { size: 1 } })
      assert.equal(total.status, 413)
      assert.match(total.body.overLimit.message, /'volumes'/)
      // A project's own limit wins over the class.
      await call(server, admin, 'PUT', `${V}/os-quota-sets/${carol.projectId}`, { quota_set: { volumes: 5 } })
      assert.equal((await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}`)).body.quota_set.volumes, 5)

      // Refusals change nothing; members may neither see nor change classes.
      assert.equal((await call(server, admin, 'PUT', `${V}/os-quota-class-sets/default`, { quota_class_set: { volumes: -2 } })).status, 400)
      assert.equal((await call(server, admin, 'PUT', `${V}/os-quota-class-sets/default`, { quota_class_set: { volumes: 'many' } })).status, 400)
      assert.equal((await call(server, admin, 'PUT', `${V}/os-quota-class-sets/default`, { volumes: 1 })).status, 400)
      assert.equal((await call(server, carol, 'GET', `${V}/os-quota-class-sets/default`)).status, 403)
      assert.equal((await call(server, carol, 'PUT', `${V}/os-quota-class-sets/default`, { quota_class_set: { volumes: 100 } })).status, 403)
      assert.equal((await call(server, admin, 'GET', `${V}/os-quota-class-sets/default`)).body.quota_class_set.volumes, 3)

      // Another class is kept and shown, but is nobody's defaults.
      await call(server, admin, 'PUT', `${V}/os-quota-class-sets/gold`, { quota_class_set: { volumes: 50 } })
      assert.equal((await call(server, admin, 'GET', `${V}/os-quota-class-sets/gold`)).body.quota_class_set.volumes, 50)
      assert.equal((await call(server, admin, 'PUT', `${V}/os-quota-class-sets/default`, { quota_class_set: { volumes: 10, volumes_bronze: -1 } })).status, 200)
      assert.equal((await call(server, carol, 'GET', `${V}/os-quota-sets/${carol.projectId}/defaults`)).body.quota_set.volumes, 10)
    })

    it('a disabled or frozen volume service gets no new volumes; a frozen one keeps its volumes as they are', async () => {
      const put = (s: Session, action: string, body: unknown) => call(server, s, 'PUT', `${V}/os-services/${action}`, body)
      const kept = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, name: 'kept' } })
      await waitStatus(server, alice, kept.body.volume.id, 'available')

      const disabled = await put(admin, 'disable-log-reason', { host: 'controller@file', binary: 'cinder-volume', disabled_reason: 'maintenance' })
      assert.equal(disabled.status, 200)
      assert.deepEqual(disabled.body, { disabled: true, status: 'disabled', host: 'controller@file', service: 'cinder-volume', binary: 'cinder-volume', disabled_reason: 'maintenance' })
      const listed = (await call(server, admin, 'GET', `${V}/os-services?binary=cinder-volume`)).body.services
      assert.deepEqual(listed.map((s: { host: string; status: string; disabled_reason: string }) => [s.host, s.status, s.disabled_reason]), [['controller@file', 'disabled', 'maintenance']])
      const hosts = (await call(server, admin, 'GET', `${V}/os-hosts`)).body.hosts
      assert.deepEqual(hosts.map((h: Record<string, string>) => [h.host_name, h.service, h['service-state']]), [['pcc', 'cinder-scheduler', 'enabled'], ['controller@file', 'cinder-volume', 'disabled']])
      assert.equal((await call(server, admin, 'GET', `${V}/os-hosts/controller@file`)).status, 404, 'a disabled service has no host details')

      // The scheduler finds no backend: the volume goes to error with the reason.
      const refused = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1 } })
      assert.equal(refused.status, 202)
      await waitStatus(server, alice, refused.body.volume.id, 'error')
      const seen = (await call(server, admin, 'GET', `${V}/volumes/${refused.body.volume.id}`)).body.volume
      assert.equal(seen['os-vol-host-attr:host'], null)
      assert.match((await server.deps.store.db.selectFrom('volumes').select('status_reason').where('id', '=', refused.body.volume.id).executeTakeFirstOrThrow()).status_reason!, /controller@file is disabled/)
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${refused.body.volume.id}`)).status, 202)

      const enabled = await put(admin, 'enable', { host: 'controller@file', binary: 'cinder-volume' })
      assert.deepEqual(enabled.body, { disabled: false, status: 'enabled', host: 'controller@file', service: 'cinder-volume', binary: 'cinder-volume', disabled_reason: null })
      const disable = await put(admin, 'disable', { host: 'pcc', binary: 'cinder-scheduler' })
      assert.deepEqual(disable.body, { disabled: true, status: 'disabled', host: 'pcc', service: 'cinder-scheduler', binary: 'cinder-scheduler' })
      await put(admin, 'enable', { host: 'pcc', binary: 'cinder-scheduler' })

      // The host's details: what its backend holds, in total and per project.
      const detail = (await call(server, admin, 'GET', `${V}/os-hosts/controller@file`)).body.host
      const total = detail[0].resource
      assert.equal(total.project, '(total)')
      const mine = detail.find((d: { resource: { project: string } }) => d.resource.project === alice.projectId).resource
      assert.deepEqual([mine.host, mine.volume_count, mine.total_volume_gb, mine.snapshot_count], ['controller@file', '1', '1', '0'])
      assert.ok(Number(total.volume_count) >= 1)

      // Frozen (by place name: all its backends): no new volumes, and its volumes are not deleted or extended.
      assert.equal((await put(admin, 'freeze', { host: 'controller' })).status, 200)
      assert.equal((await call(server, admin, 'GET', `${V}/os-services?host=controller`)).body.services[0].frozen, true)
      const frozenDelete = await call(server, alice, 'DELETE', `${V}/volumes/${kept.body.volume.id}`)
      assert.equal(frozenDelete.status, 400)
      assert.match(frozenDelete.body.badRequest.message, /frozen/)
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${kept.body.volume.id}/action`, { 'os-extend': { new_size: 2 } })).status, 400)
      const whileFrozen = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1 } })
      await waitStatus(server, alice, whileFrozen.body.volume.id, 'error')
      assert.equal((await put(admin, 'thaw', { host: 'controller@file' })).status, 200)
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${kept.body.volume.id}`)).body.volume.size, 1)
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${kept.body.volume.id}`)).status, 202)
      await call(server, alice, 'DELETE', `${V}/volumes/${whileFrozen.body.volume.id}`)
    })

    it('refuses service changes naming nothing, without a reason, or from members', async () => {
      const put = (s: Session, action: string, body: unknown) => call(server, s, 'PUT', `${V}/os-services/${action}`, body)
      assert.equal((await put(admin, 'enable', { host: 'invalid_host', binary: 'cinder-volume' })).status, 404)
      assert.equal((await put(admin, 'disable', { host: 'controller@file', binary: 'invalid_binary' })).status, 404)
      assert.equal((await put(admin, 'disable', { host: 'controller@file' })).status, 400)
      assert.equal((await put(admin, 'disable', { binary: 'cinder-volume' })).status, 400)
      assert.equal((await put(admin, 'disable-log-reason', { host: 'controller@file', binary: 'cinder-volume', disabled_reason: null })).status, 400)
      assert.equal((await put(admin, 'disable-log-reason', { host: 'controller@file', binary: 'cinder-volume', disabled_reason: '  ' })).status, 400)
      assert.equal((await put(admin, 'freeze', { host: 'invalid_host' })).status, 400)
      assert.equal((await put(admin, 'thaw', { host: 'pcc' })).status, 400, 'the scheduler has no backend to thaw')
      assert.equal((await put(admin, 'reboot', { host: 'controller@file', binary: 'cinder-volume' })).status, 404)
      assert.equal((await put(alice, 'disable', { host: 'controller@file', binary: 'cinder-volume' })).status, 403)
      assert.equal((await put(alice, 'freeze', { host: 'controller@file' })).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/os-hosts`)).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/os-hosts/controller@file`)).status, 403)
      assert.equal((await call(server, admin, 'GET', `${V}/os-hosts/nowhere@file`)).status, 404)
      // Nothing changed.
      const services = (await call(server, admin, 'GET', `${V}/os-services`)).body.services
      assert.ok(services.every((s: { status: string; frozen?: boolean }) => s.status === 'enabled' && s.frozen !== true))
    })

    it("lists the scheduler's pools with the controller's real capacity, and each backend's capabilities", async () => {
      const pools = await call(server, admin, 'GET', `${V}/scheduler-stats/get_pools`)
      assert.equal(pools.status, 200)
      assert.deepEqual(pools.body.pools, [{ name: 'controller@file#file' }])
      const vol = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 3 } })
      await waitStatus(server, alice, vol.body.volume.id, 'available')
      const [pool] = (await call(server, admin, 'GET', `${V}/scheduler-stats/get_pools?detail=true`)).body.pools
      const caps = pool.capabilities
      // The file backend's figures are the data directory's file system.
      const fs = statfsSync(server.deps.config.dataDir)
      assert.equal(caps.total_capacity_gb, Math.floor((fs.blocks * fs.bsize) / 2 ** 30))
      assert.ok(caps.free_capacity_gb <= caps.total_capacity_gb)
      assert.ok(caps.allocated_capacity_gb >= 3)
      assert.deepEqual([caps.volume_backend_name, caps.vendor_name, caps.storage_protocol, caps.thin_provisioning_support], ['file', 'Open Source', 'nbd', true])
      // The volume's host is the pool's name.
      assert.equal((await call(server, admin, 'GET', `${V}/volumes/${vol.body.volume.id}`)).body.volume['os-vol-host-attr:host'], pool.name)

      const backend = await call(server, admin, 'GET', `${V}/capabilities/${encodeURIComponent(pool.name)}`)
      assert.equal(backend.status, 200)
      assert.equal(backend.body.namespace, 'OS::Storage::Capabilities::controller@file')
      assert.deepEqual([backend.body.volume_backend_name, backend.body.vendor_name, backend.body.storage_protocol], [caps.volume_backend_name, caps.vendor_name, caps.storage_protocol])
      assert.equal((await call(server, admin, 'GET', `${V}/capabilities/controller@file`)).status, 200)

      // A disabled service's pool is not offered; unknown hosts are 404; members see neither.
      await call(server, admin, 'PUT', `${V}/os-services/disable`, { host: 'controller@file', binary: 'cinder-volume' })
      assert.deepEqual((await call(server, admin, 'GET', `${V}/scheduler-stats/get_pools`)).body.pools, [])
      await call(server, admin, 'PUT', `${V}/os-services/enable`, { host: 'controller@file', binary: 'cinder-volume' })
      assert.equal((await call(server, admin, 'GET', `${V}/capabilities/nowhere@file`)).status, 404)
      assert.equal((await call(server, admin, 'GET', `${V}/scheduler-stats/get_pools?detail=maybe`)).status, 400)
      assert.equal((await call(server, alice, 'GET', `${V}/scheduler-stats/get_pools`)).status, 403)
      assert.equal((await call(server, alice, 'GET', `${V}/capabilities/controller@file`)).status, 403)
      await call(server, alice, 'DELETE', `${V}/volumes/${vol.body.volume.id}`)
    })

    it("a type asking for capabilities the backend lacks finds no backend; the project gets a message saying why", async () => {
      const M = { 'openstack-api-version': 'volume 3.3' }
      const bogus = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'bogus', extra_specs: { storage_protocol: 'iSCSI', vendor_name: 'Acme' } } })).body.volume_type
      const fitting = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'fitting', extra_specs: { storage_protocol: 'nbd', 'capabilities:vendor_name': 'Open Source', thin_provisioning_support: '<is> True' } } })).body.volume_type
      const ok = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: fitting.id } })
      await waitStatus(server, alice, ok.body.volume.id, 'available')
      const failed = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, volume_type: bogus.id } })
      await waitStatus(server, alice, failed.body.volume.id, 'error')

      const list = await call(server, alice, 'GET', `${V}/messages`, undefined, M)
      assert.equal(list.status, 200)
      const message = list.body.messages.find((m: { resource_uuid: string }) => m.resource_uuid === failed.body.volume.id)
      assert.ok(message, 'a message for the failed volume')
      assert.equal(message.resource_type, 'VOLUME')
      assert.equal(message.message_level, 'ERROR')
      assert.equal(message.event_id, 'VOLUME_VOLUME_001_002')
      assert.match(message.user_message, /^schedule allocate volume: No valid backend was found: .*storage_protocol=iSCSI, vendor_name=Acme/)
      assert.equal(list.body.messages.some((m: { resource_uuid: string }) => m.resource_uuid === ok.body.volume.id), false)
      const shown = await call(server, alice, 'GET', `${V}/messages/${message.id}`, undefined, M)
      assert.deepEqual(shown.body.message, message)

      // Another project sees nothing of it; admins see every project's; before 3.3 there is no such API.
      assert.equal((await call(server, bob, 'GET', `${V}/messages`, undefined, M)).body.messages.length, 0)
      assert.equal((await call(server, bob, 'GET', `${V}/messages/${message.id}`, undefined, M)).status, 404)
      assert.equal((await call(server, bob, 'DELETE', `${V}/messages/${message.id}`, undefined, M)).status, 404)
      assert.ok((await call(server, admin, 'GET', `${V}/messages`, undefined, M)).body.messages.some((m: { id: string }) => m.id === message.id))
      assert.equal((await call(server, alice, 'GET', `${V}/messages`)).status, 404)
      // A retype to a type no backend fits is refused at once.
      const retype = await call(server, alice, 'POST', `${V}/volumes/${ok.body.volume.id}/action`, { 'os-retype': { new_type: 'bogus' } })
      assert.equal(retype.status, 400)

      assert.equal((await call(server, alice, 'DELETE', `${V}/messages/${message.id}`, undefined, M)).status, 204)
      assert.equal((await call(server, alice, 'GET', `${V}/messages/${message.id}`, undefined, M)).status, 404)
      await call(server, alice, 'DELETE', `${V}/volumes/${ok.body.volume.id}`)
      await call(server, alice, 'DELETE', `${V}/volumes/${failed.body.volume.id}`)
    })

    it("lets a snapshot's creator report its status and progress, only along Cinder's transitions", async () => {
      const vol = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1 } })
      await waitStatus(server, alice, vol.body.volume.id, 'available')
      const snap = (await call(server, alice, 'POST', `${V}/snapshots`, { snapshot: { volume_id: vol.body.volume.id } })).body.snapshot
      const show = async () => (await call(server, alice, 'GET', `${V}/snapshots/${snap.id}`)).body.snapshot
      await eventually(async () => (await show()).status === 'available', 10_000, 'the snapshot to be available')
      const update = (s: Session, body: Record<string, unknown>) => call(server, s, 'POST', `${V}/snapshots/${snap.id}/action`, { 'os-update_snapshot_status': body })

      // Available is not a status one may report on.
      const fromAvailable = await update(alice, { status: 'error' })
      assert.equal(fromAvailable.status, 400)
      assert.match(fromAvailable.body.badRequest.message, /Snapshot status available not allowed/)
      await call(server, admin, 'POST', `${V}/snapshots/${snap.id}/action`, { 'os-reset_status': { status: 'creating' } })
      assert.equal((await update(alice, { status: 'deleting' })).status, 400)
      assert.equal((await update(alice, { progress: '10%' })).status, 400, 'status is required')
      assert.equal((await update(bob, { status: 'error' })).status, 404, "another project's snapshot")
      assert.equal((await show()).status, 'creating', 'refusals changed nothing')

      assert.equal((await update(alice, { status: 'creating', progress: '80%' })).status, 202)
      assert.equal((await show())['os-extended-snapshot-attributes:progress'], '80%')
      assert.equal((await update(alice, { status: 'available', progress: '100%' })).status, 202, 'the backend made it long ago')
      const done = await show()
      assert.deepEqual([done.status, done['os-extended-snapshot-attributes:progress']], ['available', '100%'])
      await call(server, admin, 'POST', `${V}/snapshots/${snap.id}/action`, { 'os-reset_status': { status: 'creating' } })
      assert.equal((await update(alice, { status: 'error', progress: '80%' })).status, 202)
      assert.deepEqual([(await show()).status, (await show())['os-extended-snapshot-attributes:progress']], ['error', '80%'])
      await call(server, alice, 'DELETE', `${V}/snapshots/${snap.id}`)
      // The delete runs in the background: the server closes only once it is done.
      await eventually(async () => (await call(server, alice, 'GET', `${V}/snapshots/${snap.id}`)).status === 404, 10_000, 'the snapshot to be gone')
    })
  })
}
