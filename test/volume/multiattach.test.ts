/**
 * Multi-attach through the compute API (simulated hosts, conductor running): a volume of a type whose extra spec
 * allows it attaches to two servers at once, is detaching during each detach and in-use until the last detaches,
 * and cannot be swapped on one server while the other keeps it; a volume of another type is refused a second
 * server (400, Nova's InvalidVolume) and nothing changes; the create body's deprecated flag makes a multiattach volume of any type
 * (Cinder still honours it). On SQLite and PostgreSQL.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { call, computeTestbed, IMAGE, type ComputeTestbed } from '../compute/helpers.js'

for (const dialect of DIALECTS) {
  describe(`multi-attach (${dialect})`, () => {
    let tb: ComputeTestbed
    const volumeApi = async (token: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${tb.server.url}/volume/v3${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    const volume = async (id: string) => (await volumeApi(tb.member.token, 'GET', `/volumes/${id}`)).body.volume
    const volumeAt = (id: string, status: string, attachments: number) =>
      until(`volume ${id} ${status} with ${attachments} attachment(s)`, 60_000, async () => {
        const v = await volume(id)
        return v.status === status && v.attachments.length === attachments ? v : undefined
      })
    const boot = async (name: string) => {
      const r = await call(tb, tb.member, 'POST', '/servers', { server: { name, imageRef: IMAGE, flavorRef: '1', networks: 'none' } }, '2.96')
      assert.equal(r.status, 202, JSON.stringify(r.body))
      const id = r.body.server.id as string
      await until(`server ${name} ACTIVE`, 60_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${id}`)).body.server.status === 'ACTIVE' ? true : undefined))
      return id
    }
    const attach = (serverId: string, volumeId: string) => call(tb, tb.member, 'POST', `/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId } }, '2.96')
    const detach = (serverId: string, volumeId: string) => call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-volume_attachments/${volumeId}`, undefined, '2.96')

    before(async () => {
      tb = await computeTestbed(dialect, { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '10' }, true)
    })
    after(() => tb.close())

    it('attaches a multiattach volume to two servers; detaching during a detach, in-use until the last detaches; no swap', async () => {
      const type = await volumeApi(tb.admin.token, 'POST', '/types', { volume_type: { name: `shared-${dialect}`, extra_specs: { multiattach: '<is> True' } } })
      assert.equal(type.status, 200)
      const created = await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1, volume_type: `shared-${dialect}` } })
      const id = created.body.volume.id as string
      await volumeAt(id, 'available', 0)
      assert.equal((await volume(id)).multiattach, true)
      const [one, two] = [await boot('one'), await boot('two')]
      assert.equal((await attach(one, id)).status, 200)
      await volumeAt(id, 'in-use', 1)
      assert.equal((await attach(two, id)).status, 200)
      const both = await volumeAt(id, 'in-use', 2)
      assert.deepEqual(both.attachments.map((a: { server_id: string }) => a.server_id).sort(), [one, two].sort())
      assert.equal((await attach(two, id)).status, 400, 'not twice to the same server')
      // Swapping it on one server would take it from under the other: 400, nothing changes (Nova).
      const spare = (await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1 } })).body.volume.id as string
      await volumeAt(spare, 'available', 0)
      const swap = await call(tb, tb.admin, 'PUT', `/servers/${one}/os-volume_attachments/${id}`, { volumeAttachment: { volumeId: spare } }, '2.96')
      assert.equal(swap.status, 400, JSON.stringify(swap.body))
      assert.match(swap.body.badRequest.message, /more than one read\/write attachment/)
      assert.equal((await volume(id)).attachments.length, 2)
      assert.equal((await volume(spare)).status, 'available')
      // While one server detaches, the volume is detaching (Cinder's begin_detaching), then in-use for the other.
      for (const h of tb.server.deps.conductor.simulatedHosts) h.driver.setDelay(1500)
      assert.equal((await detach(one, id)).status, 202)
      const detaching = await volume(id)
      assert.equal(detaching.status, 'detaching')
      assert.equal((await detach(two, id)).status, 400, 'one detach at a time, as Nova and Cinder')
      for (const h of tb.server.deps.conductor.simulatedHosts) h.driver.setDelay(10)
      await volumeAt(id, 'in-use', 1)
      assert.equal((await detach(two, id)).status, 202)
      await volumeAt(id, 'available', 0)
    })

    it('refuses a second server for a volume whose type does not allow it, changing nothing', async () => {
      const created = await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1 } })
      const id = created.body.volume.id as string
      await volumeAt(id, 'available', 0)
      const [one, two] = [await boot('three'), await boot('four')]
      assert.equal((await attach(one, id)).status, 200)
      await volumeAt(id, 'in-use', 1)
      const refused = await attach(two, id)
      assert.equal(refused.status, 400, JSON.stringify(refused.body))
      const after = await volume(id)
      assert.equal(after.attachments.length, 1)
      assert.equal(after.attachments[0].server_id, one)
    })

    it("the create body's deprecated multiattach flag makes a multiattach volume of any type, as Cinder still does", async () => {
      const flagged = await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1, multiattach: true } })
      assert.equal(flagged.status, 202, JSON.stringify(flagged.body))
      assert.equal(flagged.body.volume.multiattach, true)
      const id = flagged.body.volume.id as string
      await volumeAt(id, 'available', 0)
      assert.equal((await volume(id)).volume_type, '__DEFAULT__', 'the type stays the default, which does not allow multiattach')
      const [one, two] = [await boot('five'), await boot('six')]
      assert.equal((await attach(one, id)).status, 200)
      await volumeAt(id, 'in-use', 1)
      assert.equal((await attach(two, id)).status, 200)
      const both = await volumeAt(id, 'in-use', 2)
      assert.deepEqual(both.attachments.map((a: { server_id: string }) => a.server_id).sort(), [one, two].sort())
      assert.equal((await detach(one, id)).status, 202)
      await volumeAt(id, 'in-use', 1)
      assert.equal((await detach(two, id)).status, 202)
      await volumeAt(id, 'available', 0)
      const plain = await volumeApi(tb.member.token, 'POST', '/volumes', { volume: { size: 1, multiattach: false } })
      assert.equal(plain.body.volume.multiattach, false)
    })
  })
}
