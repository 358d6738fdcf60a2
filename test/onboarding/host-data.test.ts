/**
 * The bytes hosts move through the control plane with their host credential (src/server/onboarding/host-data.ts):
 * image downloads, snapshot uploads and cold-migration disks, each allowed only for what the host's own guests need.
 * Two agent hosts registered through the real API (no agent runs); a server built on a simulated host is then moved
 * onto one of them in the store, as a build on that host would have placed it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { until } from '../../src/testkit/compute-api.js'
import { call, computeTestbed, createBody, unlimited, type ComputeTestbed, type Persona } from '../compute/helpers.js'

interface Host {
  id: string
  credential: string
}

describe('what a host may read and write through the control plane', () => {
  let tb: ComputeTestbed
  let h1: Host
  let h2: Host
  let serverId: string
  let bootImage: string
  /** The simulated host that built the server (it takes the server back to delete it: no agent runs on h1). */
  let builtOn: string

  const resmgr = async (method: string, path: string, auth: { credential?: string; token?: string }, body?: Buffer | object) => {
    const headers: Record<string, string> = {
      ...(auth.credential && { authorization: `Bearer ${auth.credential}` }),
      ...(auth.token && { 'x-auth-token': auth.token }),
      ...(body !== undefined && { 'content-type': Buffer.isBuffer(body) ? 'application/octet-stream' : 'application/json' }),
    }
    const res = await fetch(`${tb.server.url}/resmgr${path}`, { method, headers, body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body) })
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) }
  }
  const register = async (): Promise<Host> => {
    const token = JSON.parse((await resmgr('POST', '/v1/registration-tokens', { token: tb.admin.token }, {})).bytes.toString()).token as string
    const id = randomUUID()
    const reg = await resmgr('POST', '/v1/hosts/register', {}, {
      registration_token: token, host_id: id, hostname: `qemu-${id.slice(0, 6)}`, os_info: { id: 'debian', version_id: '12', pretty_name: 'Debian' }, arch: 'x86_64',
      cpu: { count: 4, model: 'x', virtualization: true }, memory_mb: 8000, disk_gb: 100, nics: [], agent_version: '0.1.0', driver: 'qemu',
    })
    assert.equal(reg.status, 201, reg.bytes.toString())
    return { id, credential: JSON.parse(reg.bytes.toString()).credential as string }
  }
  /** An active image of `who`'s project (private unless said otherwise) with these bytes. */
  const image = async (who: Persona, body: Record<string, unknown>, bytes = Buffer.alloc(4096, 7)): Promise<string> => {
    const headers = { 'x-auth-token': who.token, 'content-type': 'application/json' }
    const created = await fetch(`${tb.server.url}/image/v2/images`, { method: 'POST', headers, body: JSON.stringify({ visibility: 'private', disk_format: 'qcow2', container_format: 'bare', ...body }) })
    assert.equal(created.status, 201)
    const id = ((await created.json()) as { id: string }).id
    const put = await fetch(`${tb.server.url}/image/v2/images/${id}/file`, { method: 'PUT', headers: { ...headers, 'content-type': 'application/octet-stream' }, body: bytes })
    assert.equal(put.status, 204)
    return id
  }
  /** A command waiting for `host` (as the conductor's agent driver queues them). */
  const command = async (host: Host, op: string, args: unknown) => {
    await tb.server.deps.store.db
      .insertInto('host_commands')
      .values({ id: randomUUID(), host_id: host.id, op, args: JSON.stringify(args), dedupe_key: randomUUID(), status: 'queued', result: null, created_at: Date.now(), delivered_at: null, finished_at: null })
      .execute()
  }
  const db = () => tb.server.deps.store.db
  const readImage = (host: Host, imageId: string, as: Host = host) => resmgr('GET', `/v1/hosts/${host.id}/images/${imageId}/file`, { credential: as.credential })

  before(async () => {
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true)
    await unlimited(tb, tb.member.projectId)
    h1 = await register()
    h2 = await register()
    bootImage = await image(tb.member, { name: 'boot' }, Buffer.alloc(8192, 3))
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('on-h1', { imageRef: bootImage }), '2.96')
    assert.equal(created.status, 202, JSON.stringify(created.body))
    serverId = created.body.server.id
    await until('the server built', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${serverId}`)).body.server.status === 'ACTIVE' ? true : undefined))
    builtOn = (await db().selectFrom('servers').select('host_id').where('id', '=', serverId).executeTakeFirstOrThrow()).host_id!
    await db().updateTable('servers').set({ host_id: h1.id }).where('id', '=', serverId).execute()
  })
  after(() => tb?.close())

  it("reads the image of a server it holds; not another host's, not with a user token, not an image nobody there needs", async () => {
    const own = await readImage(h1, bootImage)
    assert.equal(own.status, 200)
    assert.deepEqual(own.bytes, Buffer.alloc(8192, 3))
    assert.equal((await readImage(h2, bootImage)).status, 404, 'h2 holds no server of it')
    assert.equal((await readImage(h1, bootImage, h2)).status, 403, "another host's credential")
    assert.equal((await resmgr('GET', `/v1/hosts/${h1.id}/images/${bootImage}/file`, { token: tb.admin.token })).status, 401, 'a user token, even an admin one')
    assert.equal((await readImage(h1, await image(tb.member, { name: 'unused' }))).status, 404)
  })

  it('reads an image a waiting command names as an image, not one named as some property value', async () => {
    const named = await image(tb.other, { name: 'named' })
    await command(h2, 'spawn', { spec: { serverId: randomUUID(), image: { id: bootImage, diskFormat: 'qcow2', properties: { note: named } }, hostname: named } })
    assert.equal((await readImage(h2, named)).status, 404, "an id in a user's strings (image properties, names) is no reference")
    assert.equal((await readImage(h2, bootImage)).status, 200, "the spec's image")
    await command(h2, 'rescue', { serverId: randomUUID(), image: { id: named } })
    assert.equal((await readImage(h2, named)).status, 200, 'a rescue image the command names')
  })

  it("reads a kernel or ramdisk its guests' image names only when that image's owner may see it", async () => {
    const theirKernel = await image(tb.other, { name: 'their-kernel', disk_format: 'aki', container_format: 'aki' })
    const myKernel = await image(tb.member, { name: 'my-kernel', disk_format: 'aki', container_format: 'aki' })
    const myRamdisk = await image(tb.member, { name: 'my-ramdisk', disk_format: 'ari', container_format: 'ari' })
    const ami = await image(tb.member, { name: 'ami', disk_format: 'ami', container_format: 'ami', kernel_id: theirKernel, ramdisk_id: myRamdisk })
    await db().updateTable('servers').set({ image_id: ami }).where('id', '=', serverId).execute()
    try {
      assert.equal((await readImage(h1, theirKernel)).status, 404, "another project's private kernel")
      assert.equal((await readImage(h1, myRamdisk)).status, 200)
      const patched = await fetch(`${tb.server.url}/image/v2/images/${ami}`, {
        method: 'PATCH',
        headers: { 'x-auth-token': tb.member.token, 'content-type': 'application/openstack-images-v2.1-json-patch' },
        body: JSON.stringify([{ op: 'replace', path: '/kernel_id', value: myKernel }]),
      })
      assert.equal(patched.status, 200)
      assert.equal((await readImage(h1, myKernel)).status, 200)
      assert.equal((await readImage(h2, myKernel)).status, 404, 'h2 holds no server of that image')
    } finally {
      await db().updateTable('servers').set({ image_id: bootImage }).where('id', '=', serverId).execute()
    }
  })

  it('stores a snapshot only into the queued image a snapshot command waiting for it names', async () => {
    // A queued image that merely says it is a snapshot of the server (any project may set instance_uuid).
    const queued = async (name: string) => {
      const created = await fetch(`${tb.server.url}/image/v2/images`, {
        method: 'POST',
        headers: { 'x-auth-token': tb.other.token, 'content-type': 'application/json' },
        body: JSON.stringify({ name, disk_format: 'qcow2', container_format: 'bare', instance_uuid: serverId }),
      })
      assert.equal(created.status, 201)
      return ((await created.json()) as { id: string }).id
    }
    const put = (host: Host, imageId: string) => resmgr('PUT', `/v1/hosts/${host.id}/images/${imageId}/file?disk_format=qcow2&container_format=bare`, { credential: host.credential }, Buffer.alloc(1024, 9))
    const claimed = await queued('claims-to-be-a-snapshot')
    assert.equal((await put(h1, claimed)).status, 404, 'no snapshot command names it')
    await command(h1, 'snapshot', { serverId, imageName: 'snap', imageId: claimed })
    assert.equal((await put(h2, claimed)).status, 404, 'the command waits for h1, not h2')
    assert.equal((await put(h1, claimed)).status, 204)
    const stored = await tb.server.deps.images.getById(claimed)
    assert.equal(stored?.status, 'active')
  })

  it("moves a migrating server's disks: put by its host, got by the host holding its claim; gone once the server is deleted", async () => {
    const disk = Buffer.alloc(2048, 5)
    const transfer = (host: Host, method: string, body?: Buffer) => resmgr(method, `/v1/hosts/${host.id}/transfers/${serverId}/disk`, { credential: host.credential }, body)
    assert.equal((await transfer(h2, 'PUT', disk)).status, 404, 'h2 does not hold the server')
    assert.equal((await transfer(h1, 'PUT', disk)).status, 204)
    assert.equal((await transfer(h2, 'GET')).status, 404, 'h2 holds no claim for it')
    await db().insertInto('allocations').values({ server_id: serverId, host_id: h2.id, vcpus: 1, memory_mb: 64, disk_gb: 1, created_at: Date.now() }).execute()
    const got = await transfer(h2, 'GET')
    assert.equal(got.status, 200)
    assert.deepEqual(got.bytes, disk)

    // A move cut short leaves its disks with the control plane; deleting the server drops them.
    await db().updateTable('servers').set({ host_id: builtOn }).where('id', '=', serverId).execute()
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}`)).status, 204)
    await until('the server deleted', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${serverId}`)).status === 404 ? true : undefined))
    assert.equal(await tb.server.deps.blobs.exists(`transfers/${serverId}/disk`), false, 'no disk left in transit')
  })
})
