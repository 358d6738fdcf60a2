/**
 * Volumes on Ceph through the block storage API, against a real cluster: with PCC_CEPH_CONF the default volume type
 * is `ceph`, and every operation of the file backend works there in Cinder's RBD layout — blank volumes, copy-on-write
 * clones of raw images and snapshots, extend, upload to image, a retype that moves a file volume's bytes into RBD,
 * and deletes that leave the pool empty. A control plane whose cephx user may only read the volumes pool gets volumes
 * in `error` with Ceph's reason, nothing half made.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Rbd } from '../../src/lib/ceph/rbd.js'
import { freshPccPools, testCeph, type CephCluster } from '../../src/testkit/ceph.js'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { openStore } from '../../src/server/storage/store.js'
import { call, issueToken } from '../ha/helpers.js'

const V = '/volume/v3'

describe('volumes on Ceph', () => {
  let ceph: CephCluster | string
  let pools: Awaited<ReturnType<typeof freshPccPools>> | undefined
  const clusters: Cluster[] = []
  let rbd: Rbd
  let env: Record<string, string>
  let dir: string

  before(async () => {
    ceph = await testCeph()
    if (typeof ceph === 'string') return
    pools = await freshPccPools(ceph)
    rbd = new Rbd({ conf: ceph.conf, user: ceph.user })
    dir = mkdtempSync(join(tmpdir(), 'pcc-ceph-volumes-'))
    env = pools.env
  })
  after(async () => {
    for (const c of clusters) await c.close()
    await pools?.remove()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await probe()
      if (value !== undefined) return value
      if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`)
      await sleep(200)
    }
  }

  it('every operation of the file backend, in RBD', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    const cluster = await startCluster({ size: 1, env })
    clusters.push(cluster)
    const base = cluster.nodes[0].url
    const { token } = await issueToken(cluster.nodes[0], cluster.adminPassword)
    const { images: imagesPool, volumes: volumesPool } = pools!
    const volume = (id: string) => call(base, 'GET', `${V}/volumes/${id}`, { token }).then((r) => r.body.volume as Record<string, unknown>)
    const available = (id: string) => until(`volume ${id} available`, async () => {
      const v = await volume(id)
      assert.notEqual(v.status, 'error', JSON.stringify(v))
      return v.status === 'available' ? v : undefined
    })
    const create = async (body: Record<string, unknown>) => {
      const r = await call(base, 'POST', `${V}/volumes`, { token, body: { volume: body } })
      assert.equal(r.status, 202, JSON.stringify(r.body))
      return available(r.body.volume.id as string)
    }

    assert.equal((await call(base, 'GET', `${V}/types/default`, { token })).body.volume_type.name, 'ceph')
    const services = await call(base, 'GET', `${V}/os-services`, { token })
    assert.ok((services.body.services as { host: string }[]).some((s) => s.host === 'controller@ceph'), JSON.stringify(services.body))

    // Blank: volume-<id> in the volumes pool.
    const blank = await create({ size: 1, name: 'blank' })
    assert.equal(blank.volume_type, 'ceph')
    assert.equal((await rbd.info(volumesPool, `volume-${blank.id as string}`))?.size, 1024 ** 3)

    // From a raw image: a clone of the image's snapshot, no copy.
    const image = await call(base, 'POST', '/image/v2/images', { token, body: { name: 'raw', disk_format: 'raw', container_format: 'bare' } })
    const imageBytes = Buffer.concat([Buffer.alloc(1 << 20, 0x7a), randomBytes(1 << 20)])
    const put = await fetch(`${base}/image/v2/images/${image.body.id as string}/file`, { method: 'PUT', headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' }, body: imageBytes })
    assert.equal(put.status, 204)
    const fromImage = await create({ size: 1, imageRef: image.body.id })
    assert.deepEqual((await rbd.info(volumesPool, `volume-${fromImage.id as string}`))?.parent, { pool: imagesPool, image: image.body.id, snapshot: 'snap' })

    // Snapshot, and a volume from it (a clone of the snapshot).
    const snap = await call(base, 'POST', `${V}/snapshots`, { token, body: { snapshot: { volume_id: fromImage.id, name: 's' } } })
    assert.equal(snap.status, 202, JSON.stringify(snap.body))
    const snapId = snap.body.snapshot.id as string
    await until('snapshot available', async () => ((await call(base, 'GET', `${V}/snapshots/${snapId}`, { token })).body.snapshot.status === 'available' ? true : undefined))
    assert.deepEqual(await rbd.snapshots(volumesPool, `volume-${fromImage.id as string}`), [`snapshot-${snapId}`])
    const fromSnap = await create({ size: 2, snapshot_id: snapId })
    assert.equal((await rbd.info(volumesPool, `volume-${fromSnap.id as string}`))?.parent?.snapshot, `snapshot-${snapId}`)
    assert.equal((await rbd.info(volumesPool, `volume-${fromSnap.id as string}`))?.size, 2 * 1024 ** 3)

    // Extend.
    assert.equal((await call(base, 'POST', `${V}/volumes/${blank.id as string}/action`, { token, body: { 'os-extend': { new_size: 3 } } })).status, 202)
    await until('extended', async () => ((await volume(blank.id as string)).size === 3 && (await volume(blank.id as string)).status === 'available' ? true : undefined))
    assert.equal((await rbd.info(volumesPool, `volume-${blank.id as string}`))?.size, 3 * 1024 ** 3)

    // Upload to image: the new image holds the volume's bytes (the raw image's, then zeros).
    const upload = await call(base, 'POST', `${V}/volumes/${fromImage.id as string}/action`, { token, body: { 'os-volume_upload_image': { image_name: 'from-ceph', disk_format: 'raw' } } })
    assert.equal(upload.status, 202, JSON.stringify(upload.body))
    const uploaded = upload.body['os-volume_upload_image'].image_id as string
    await until('uploaded image active', async () => ((await call(base, 'GET', `/image/v2/images/${uploaded}`, { token })).body.status === 'active' ? true : undefined))
    const download = await fetch(`${base}/image/v2/images/${uploaded}/file`, { headers: { 'x-auth-token': token } })
    let head = Buffer.alloc(0)
    let length = 0
    for await (const chunk of download.body!) {
      if (head.length < imageBytes.length) head = Buffer.concat([head, chunk])
      length += chunk.length
    }
    assert.equal(length, 1024 ** 3)
    assert.ok(head.subarray(0, imageBytes.length).equals(imageBytes), 'the uploaded image holds other bytes than the volume')

    // Retype: a file volume's bytes move into RBD.
    const onFile = await create({ size: 1, volume_type: '__DEFAULT__' })
    assert.equal(await rbd.info(volumesPool, `volume-${onFile.id as string}`), undefined)
    const retype = await call(base, 'POST', `${V}/volumes/${onFile.id as string}/action`, { token, body: { 'os-retype': { new_type: 'ceph', migration_policy: 'on-demand' } } })
    assert.equal(retype.status, 202, JSON.stringify(retype.body))
    await until('retyped', async () => {
      const v = await volume(onFile.id as string)
      return v.volume_type === 'ceph' && v.status === 'available' ? true : undefined
    })
    assert.ok(await rbd.info(volumesPool, `volume-${onFile.id as string}`))

    // Deletes: the pool ends empty (the snapshot's clone is flattened when its source goes).
    assert.equal((await call(base, 'DELETE', `${V}/snapshots/${snapId}`, { token })).status, 202)
    await until('snapshot gone', async () => ((await call(base, 'GET', `${V}/snapshots/${snapId}`, { token })).status === 404 ? true : undefined))
    for (const v of [blank, fromImage, fromSnap, onFile]) assert.equal((await call(base, 'DELETE', `${V}/volumes/${v.id as string}`, { token })).status, 202)
    await until('volumes pool empty', async () => ((await rbd.list(volumesPool)).length === 0 ? true : undefined))
  })

  it('a control plane that may only read the volumes pool gets volumes in error with the reason, and nothing half made', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    const keyring = join(dir, 'reader.keyring')
    execFileSync('ceph', ['-c', ceph.conf, '--id', ceph.user, 'auth', 'get-or-create', 'client.pcc-reader', 'mon', 'profile rbd', 'osd', `profile rbd pool=${pools!.images}, profile rbd-read-only pool=${pools!.volumes}, profile rbd pool=${pools!.vms}`, '-o', keyring])
    const cluster = await startCluster({ size: 1, env: { ...env, PCC_CEPH_USER: 'pcc-reader', PCC_CEPH_KEYRING: keyring } })
    clusters.push(cluster)
    const base = cluster.nodes[0].url
    const { token } = await issueToken(cluster.nodes[0], cluster.adminPassword)
    const r = await call(base, 'POST', `${V}/volumes`, { token, body: { volume: { size: 1, name: 'refused' } } })
    assert.equal(r.status, 202)
    await until('volume in error', async () => ((await call(base, 'GET', `${V}/volumes/${r.body.volume.id as string}`, { token })).body.volume.status === 'error' ? true : undefined))
    // The reason is kept with the volume (the store's status_reason), as Ceph said it.
    const store = await openStore({ dataDir: dir, databaseUrl: cluster.databaseUrl, poolSize: 1 })
    try {
      const row = await store.db.selectFrom('volumes').select('status_reason').where('id', '=', r.body.volume.id as string).executeTakeFirstOrThrow()
      assert.match(row.status_reason ?? '', /rbd create failed: .*(Operation not permitted|Permission denied)/)
    } finally {
      await store.close()
    }
    assert.equal(await rbd.info(pools!.volumes, `volume-${r.body.volume.id as string}`), undefined)
  })
})
