/**
 * Images a server names beside its own — a rescue image, its image's `kernel_id` and `ramdisk_id` — reach its host
 * only when the server's project may use them (visible to the project, active), as Nova reads them with the user's
 * context. Otherwise a project could have another project's private image booted as its rescue disk, or loaded into
 * its guest's memory as a kernel or initrd, and read it there. Through the API with the conductor and simulated
 * hosts; the spec a real hypervisor would get is read from the conductor's spec builder.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { specFor } from '../../src/server/conductor/guest-specs.js'
import type { ConductorContext } from '../../src/server/conductor/context.js'
import { DriverError, type ComputeDriver } from '../../src/contracts/host/compute-driver.js'
import { until } from '../../src/testkit/compute-api.js'
import { call, computeTestbed, createBody, unlimited, type ComputeTestbed, type Persona } from '../compute/helpers.js'

describe('images a server names beside its own', () => {
  let tb: ComputeTestbed
  let serverId: string

  /** An active image of `who`'s project (private unless said otherwise) with a few bytes. */
  const image = async (who: Persona, body: Record<string, unknown>): Promise<string> => {
    const headers = { 'x-auth-token': who.token, 'content-type': 'application/json' }
    const created = await fetch(`${tb.server.url}/image/v2/images`, { method: 'POST', headers, body: JSON.stringify({ visibility: 'private', ...body }) })
    assert.equal(created.status, 201)
    const id = ((await created.json()) as { id: string }).id
    const put = await fetch(`${tb.server.url}/image/v2/images/${id}/file`, { method: 'PUT', headers: { ...headers, 'content-type': 'application/octet-stream' }, body: Buffer.alloc(4096, 7) })
    assert.equal(put.status, 204)
    return id
  }
  const rests = (id: string) =>
    until(`server ${id} to rest`, 30_000, async () => {
      const s = (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
      return s['OS-EXT-STS:task_state'] === null && s.status !== 'BUILD' ? (s as { status: string; fault?: unknown }) : undefined
    })

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
    await unlimited(tb, tb.member.projectId)
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('named-images'), '2.96')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    serverId = created.body.server.id
    const built = await rests(serverId)
    assert.equal(built.status, 'ACTIVE', JSON.stringify(built.fault))
  })
  after(() => tb?.close())

  it("refuses another project's private image as the rescue disk; the server stays as it was", async () => {
    const theirs = await image(tb.other, { name: 'their-disk', disk_format: 'qcow2', container_format: 'bare' })
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { rescue: { rescue_image_ref: theirs } })).status, 200)
    assert.equal((await rests(serverId)).status, 'ACTIVE', 'not rescued from an image its project cannot see')

    const mine = await image(tb.member, { name: 'my-rescue', disk_format: 'qcow2', container_format: 'bare' })
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { rescue: { rescue_image_ref: mine } })).status, 200)
    assert.equal((await rests(serverId)).status, 'RESCUE', "the project's own image rescues")
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${serverId}/action`, { unrescue: null })).status, 202)
    const built = await rests(serverId)
    assert.equal(built.status, 'ACTIVE', JSON.stringify(built.fault))
  })

  it("gives a real hypervisor no kernel or ramdisk of another project's: the spec fails, naming the image", async () => {
    const ctx = { store: tb.server.deps.store, storage: { images: tb.server.deps.images } } as unknown as ConductorContext
    const realGuests = { guestDetails: true } as ComputeDriver
    const row = await tb.server.deps.store.db.selectFrom('servers').selectAll().where('id', '=', serverId).executeTakeFirstOrThrow()
    const theirKernel = await image(tb.other, { name: 'their-kernel', disk_format: 'aki', container_format: 'aki' })
    const theirRamdisk = await image(tb.other, { name: 'their-ramdisk', disk_format: 'ari', container_format: 'ari' })
    const myKernel = await image(tb.member, { name: 'my-kernel', disk_format: 'aki', container_format: 'aki' })
    const myRamdisk = await image(tb.member, { name: 'my-ramdisk', disk_format: 'ari', container_format: 'ari' })
    const ami = (kernel: string, ramdisk: string) => image(tb.member, { name: 'ami', disk_format: 'ami', container_format: 'ami', kernel_id: kernel, ramdisk_id: ramdisk })

    for (const [kernel, ramdisk, property] of [[theirKernel, myRamdisk, 'kernel_id'], [myKernel, theirRamdisk, 'ramdisk_id']]) {
      const imageId = await ami(kernel, ramdisk)
      await assert.rejects(specFor(ctx, realGuests, row, { imageId }), (err: unknown) => {
        assert.ok(err instanceof DriverError, String(err))
        assert.equal(err.code, 400)
        assert.match(err.message, new RegExp(`\\(${property} of image ${imageId}\\) could not be found`))
        return true
      })
    }
    const spec = await specFor(ctx, realGuests, row, { imageId: await ami(myKernel, myRamdisk) })
    assert.deepEqual([spec.kernel?.id, spec.ramdisk?.id], [myKernel, myRamdisk], "the project's own kernel and ramdisk")
  })
})
