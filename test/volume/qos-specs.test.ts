/**
 * Cinder's QoS specs: the API (admins only; create, show, list, set and unset keys, associate with volume types,
 * delete with and without force), every refusal with its status and body and that it changed nothing; then the
 * effect, with simulated hosts and the conductor running: a volume of a type with front-end specs reaches its
 * host with the limits (the simulated guest's console says so, as a QEMU host sets them on the disk), one with
 * back-end specs without. On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { adminSession, call, projectSession, type Session } from '../image/support.js'
import { call as computeCall, computeTestbed, IMAGE, type ComputeTestbed } from '../compute/helpers.js'

const V = '/volume/v3'

for (const dialect of DIALECTS) {
  describe(`QoS specs API (${dialect})`, () => {
    let server: TestServer
    let admin: Session
    let alice: Session

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
    })
    after(() => server.close())

    const create = (body: Record<string, unknown>) => call(server, admin, 'POST', `${V}/qos-specs`, { qos_specs: body })
    const show = async (id: string) => (await call(server, admin, 'GET', `${V}/qos-specs/${id}`)).body.qos_specs
    const associations = async (id: string) => (await call(server, admin, 'GET', `${V}/qos-specs/${id}/associations`)).body.qos_associations.map((a: { id: string }) => a.id)

    it('creates, shows, lists, sets and unsets keys, and deletes', async () => {
      const created = await create({ name: 'gold', consumer: 'front-end', read_iops_sec: '2000' })
      assert.equal(created.status, 200)
      const qos = created.body.qos_specs
      assert.deepEqual(Object.keys(qos).sort(), ['consumer', 'id', 'name', 'specs'])
      assert.deepEqual({ name: qos.name, consumer: qos.consumer, specs: qos.specs }, { name: 'gold', consumer: 'front-end', specs: { read_iops_sec: '2000' } })
      assert.equal(created.body.links[0].rel, 'self')
      assert.deepEqual(await show(qos.id), qos)
      assert.deepEqual((await call(server, admin, 'GET', `${V}/qos-specs`)).body.qos_specs, [qos])
      // Without a consumer: back-end, as Cinder.
      assert.equal((await create({ name: 'plain' })).body.qos_specs.consumer, 'back-end')

      const set = await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}`, { qos_specs: { iops_bytes: '500', consumer: 'both' } })
      assert.equal(set.status, 200)
      assert.deepEqual(set.body.qos_specs, { iops_bytes: '500', consumer: 'both' })
      assert.deepEqual(await show(qos.id), { ...qos, consumer: 'both', specs: { read_iops_sec: '2000', iops_bytes: '500' } })
      assert.equal((await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}/delete_keys`, { keys: ['iops_bytes'] })).status, 202)
      assert.deepEqual((await show(qos.id)).specs, { read_iops_sec: '2000' })

      assert.equal((await call(server, admin, 'DELETE', `${V}/qos-specs/${qos.id}?force=False`)).status, 202)
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}`)).status, 404)
    })

    it('refuses bad specs, duplicates, unknown keys and ids; nothing changes', async () => {
      const qos = (await create({ name: 'silver', consumer: 'front-end', total_iops_sec: '100' })).body.qos_specs
      const refusals: [Record<string, unknown>, number, RegExp][] = [
        [{ consumer: 'front-end' }, 400, /name/],
        [{ name: '   ' }, 400, /name must be 1 to 255/],
        [{ name: 'x', consumer: 'middle' }, 400, /Valid consumer of QoS specs are: front-end, back-end, both/],
        [{ name: 'x', total_iops_sec: 'fast' }, 400, /total_iops_sec must be a whole number/],
        [{ name: 'x', total_iops_sec: '-1' }, 400, /whole number/],
        [{ name: 'x', total_iops_sec: '10', read_iops_sec: '5' }, 400, /cannot be combined/],
        [{ name: 'x', write_bytes_sec_max: '10' }, 400, /write_bytes_sec_max needs write_bytes_sec/],
        [{ name: 'x', total_iops_sec: '10', total_iops_sec_max: '5' }, 400, /may not be below it/],
        [{ name: 'silver' }, 409, /QoS Specs silver already exists/],
      ]
      for (const [body, status, message] of refusals) {
        const r = await create(body)
        assert.equal(r.status, status, JSON.stringify(body))
        assert.match(JSON.stringify(r.body), message, JSON.stringify(body))
      }
      assert.deepEqual((await call(server, admin, 'GET', `${V}/qos-specs`)).body.qos_specs.map((q: { name: string }) => q.name).filter((n: string) => n === 'x'), [])

      // A key set that would break the limits is refused whole.
      const badSet = await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}`, { qos_specs: { read_iops_sec: '5', iops_bytes: '1' } })
      assert.equal(badSet.status, 400)
      assert.match(badSet.body.badRequest.message, /cannot be combined/)
      const badConsumer = await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}`, { qos_specs: { consumer: 'nobody' } })
      assert.equal(badConsumer.status, 400)
      assert.equal((await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}`, { qos_specs: {} })).status, 400)
      const missingKey = await call(server, admin, 'PUT', `${V}/qos-specs/${qos.id}/delete_keys`, { keys: ['total_iops_sec', 'nope'] })
      assert.equal(missingKey.status, 404)
      assert.match(missingKey.body.itemNotFound.message, /QoS spec nope is not found/)
      assert.deepEqual(await show(qos.id), qos)

      const ghost = '00000000-0000-0000-0000-000000000000'
      for (const [method, path, body] of [
        ['GET', `/qos-specs/${ghost}`],
        ['PUT', `/qos-specs/${ghost}`, { qos_specs: { a: 'b' } }],
        ['PUT', `/qos-specs/${ghost}/delete_keys`, { keys: ['a'] }],
        ['DELETE', `/qos-specs/${ghost}`],
        ['GET', `/qos-specs/${ghost}/associations`],
        ['GET', `/qos-specs/${ghost}/disassociate_all`],
      ] as [string, string, unknown?][]) {
        const r = await call(server, admin, method, `${V}${path}`, body)
        assert.equal(r.status, 404, `${method} ${path}`)
        assert.match(r.body.itemNotFound.message, /QoS specs .* could not be found/)
      }
      assert.equal((await call(server, admin, 'DELETE', `${V}/qos-specs/${qos.id}?force=perhaps`)).status, 400)
    })

    it('associates with volume types, one set per type; in use it is deleted only by force', async () => {
      const qos = (await create({ name: 'bronze', consumer: 'front-end', total_bytes_sec: '1048576' })).body.qos_specs
      const other = (await create({ name: 'copper' })).body.qos_specs
      const type = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'qos-a' } })).body.volume_type
      const type2 = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'qos-b' } })).body.volume_type

      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/associate?vol_type_id=${type.id}`)).status, 202)
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/associate?vol_type_id=${type.id}`)).status, 202, 'again: nothing changes')
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/associate?vol_type_id=${type2.id}`)).status, 202)
      assert.deepEqual((await associations(qos.id)).sort(), [type.id, type2.id].sort())
      assert.equal((await call(server, admin, 'GET', `${V}/types/${type.id}`)).body.volume_type.qos_specs_id, qos.id)
      assert.equal((await call(server, alice, 'GET', `${V}/types/${type.id}`)).body.volume_type.qos_specs_id, undefined, 'not shown to non-admins')

      const taken = await call(server, admin, 'GET', `${V}/qos-specs/${other.id}/associate?vol_type_id=${type.id}`)
      assert.equal(taken.status, 400)
      assert.match(taken.body.badRequest.message, /already associated with another qos specs/)
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${other.id}/associate`)).status, 400)
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${other.id}/associate?vol_type_id=nope`)).status, 404)
      assert.deepEqual(await associations(other.id), [])

      const inUse = await call(server, admin, 'DELETE', `${V}/qos-specs/${qos.id}`)
      assert.equal(inUse.status, 400)
      assert.match(inUse.body.badRequest.message, /still in use/)
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${other.id}/disassociate?vol_type_id=${type.id}`)).status, 202, 'not its set: nothing changes')
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/disassociate?vol_type_id=${type.id}`)).status, 202)
      assert.deepEqual(await associations(qos.id), [type2.id])
      assert.equal((await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/disassociate_all`)).status, 202)
      assert.deepEqual(await associations(qos.id), [])

      await call(server, admin, 'GET', `${V}/qos-specs/${qos.id}/associate?vol_type_id=${type.id}`)
      assert.equal((await call(server, admin, 'DELETE', `${V}/qos-specs/${qos.id}?force=true`)).status, 202)
      assert.equal((await call(server, admin, 'GET', `${V}/types/${type.id}`)).body.volume_type.qos_specs_id, null)
    })

    it('is for admins only', async () => {
      const qos = (await create({ name: 'tin' })).body.qos_specs
      const type = (await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'qos-c' } })).body.volume_type
      for (const [method, path, body] of [
        ['GET', '/qos-specs'],
        ['POST', '/qos-specs', { qos_specs: { name: 'mine' } }],
        ['GET', `/qos-specs/${qos.id}`],
        ['PUT', `/qos-specs/${qos.id}`, { qos_specs: { a: 'b' } }],
        ['PUT', `/qos-specs/${qos.id}/delete_keys`, { keys: ['a'] }],
        ['DELETE', `/qos-specs/${qos.id}`],
        ['GET', `/qos-specs/${qos.id}/associations`],
        ['GET', `/qos-specs/${qos.id}/associate?vol_type_id=${type.id}`],
        ['GET', `/qos-specs/${qos.id}/disassociate?vol_type_id=${type.id}`],
        ['GET', `/qos-specs/${qos.id}/disassociate_all`],
      ] as [string, string, unknown?][]) {
        assert.equal((await call(server, alice, method, `${V}${path}`, body)).status, 403, `${method} ${path}`)
        assert.equal((await call(server, undefined, method, `${V}${path}`, body)).status, 401, `${method} ${path} without a token`)
      }
      assert.deepEqual(await show(qos.id), qos)
      assert.deepEqual(await associations(qos.id), [])
    })
  })

  describe(`QoS specs applied on attach (${dialect})`, () => {
    let tb: ComputeTestbed
    const volumeApi = async (token: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${tb.server.url}${V}${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    const consoleOf = async (serverId: string) => ((await computeCall(tb, tb.member, 'POST', `/servers/${serverId}/action`, { 'os-getConsoleOutput': {} })).body?.output as string | undefined) ?? ''

    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '10' }, true)
    })
    after(() => tb.close())

    /** A type associated with new QoS specs of this consumer, and an available volume of it. */
    const volumeWith = async (name: string, consumer: string) => {
      const qos = (await volumeApi(tb.admin.token, 'POST', '/qos-specs', { qos_specs: { name, consumer, total_iops_sec: '50', total_iops_sec_max: '80', write_bytes_sec: '1048576' } })).body.qos_specs
      const type = (await volumeApi(tb.admin.token, 'POST', '/types', { volume_type: { name } })).body.volume_type
      assert.equal((await volumeApi(tb.admin.token, 'GET', `/qos-specs/${qos.id}/associate?vol_type_id=${type.id}`)).status, 202)
      const id = (await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1, volume_type: name } })).body.volume.id as string
      await until(`volume ${id} available`, 60_000, async () => ((await volumeApi(tb.member.token, 'GET', `/volumes/${id}`)).body.volume.status === 'available' ? true : undefined))
      return id
    }

    it("gives the hypervisor a front-end type's limits with the attach, and no back-end limits", async () => {
      const boot = await computeCall(tb, tb.member, 'POST', '/servers', { server: { name: 'qos', imageRef: IMAGE, flavorRef: '1', networks: 'none' } }, '2.96')
      assert.equal(boot.status, 202, JSON.stringify(boot.body))
      const serverId = boot.body.server.id as string
      await until('server ACTIVE', 60_000, async () => ((await computeCall(tb, tb.member, 'GET', `/servers/${serverId}`)).body.server.status === 'ACTIVE' ? true : undefined))

      const front = await volumeWith(`front-${dialect}`, 'both')
      const back = await volumeWith(`back-${dialect}`, 'back-end')
      for (const id of [front, back]) {
        assert.equal((await computeCall(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: id } }, '2.96')).status, 200)
        await until(`volume ${id} in-use`, 60_000, async () => ((await volumeApi(tb.member.token, 'GET', `/volumes/${id}`)).body.volume.status === 'in-use' ? true : undefined))
      }
      const text = await consoleOf(serverId)
      assert.match(text, new RegExp(`volume ${front} throttled: .*total_iops_sec=50 .*total_iops_sec_max=80`))
      assert.match(text, new RegExp(`volume ${front} throttled: .*write_bytes_sec=1048576`))
      assert.match(text, new RegExp(`attached \\(volume ${back}\\)`))
      assert.doesNotMatch(text, new RegExp(`volume ${back} throttled`))
    })
  })
}
