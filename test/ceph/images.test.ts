/**
 * Images in RBD through the public API: two pcc-server processes on one PostgreSQL and a real Ceph cluster (the
 * run's, or one this file starts), no shared folder between them. An image uploaded through one process is read
 * through the other, lives as `<id>` with a protected snapshot `snap` in the images pool, and its delete removes
 * both. And the start-up failures an operator meets, each one line on stderr.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Rbd } from '../../src/lib/ceph/rbd.js'
import { freshPccPools, testCeph, type CephCluster } from '../../src/testkit/ceph.js'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { spawnServer } from '../../src/testkit/process.js'
import { freePort } from '../../src/testkit/harness.js'
import { call, issueToken } from '../ha/helpers.js'

describe('images in RBD', () => {
  let ceph: CephCluster | string
  let pools: Awaited<ReturnType<typeof freshPccPools>> | undefined
  let cluster: Cluster | undefined
  let rbd: Rbd
  let env: Record<string, string>

  before(async () => {
    ceph = await testCeph()
    if (typeof ceph === 'string') return
    pools = await freshPccPools(ceph)
    rbd = new Rbd({ conf: ceph.conf, user: ceph.user })
    env = pools.env
  })
  after(async () => {
    await cluster?.close()
    await pools?.remove()
  })

  it('an image uploaded through one process is served by another from RBD, and its delete removes it there', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    cluster = await startCluster({ size: 2, env })
    const [a, b] = cluster.nodes
    const { token } = await issueToken(a, cluster.adminPassword)
    // The default image, uploaded at the first start, is in RBD already.
    const listed = await call(b.url, 'GET', '/image/v2/images', { token })
    const defaultImage = (listed.body.images as { id: string; status: string }[]).find((i) => i.status === 'active')
    assert.ok(defaultImage, JSON.stringify(listed.body))
    assert.ok((await rbd.list(pools!.images)).includes(defaultImage.id))

    const created = await call(a.url, 'POST', '/image/v2/images', { token, body: { name: 'on-ceph', disk_format: 'raw', container_format: 'bare' } })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const id = created.body.id as string
    const bytes = randomBytes(3 * 1024 * 1024 + 5)
    const put = await fetch(`${a.url}/image/v2/images/${id}/file`, { method: 'PUT', headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' }, body: bytes })
    assert.equal(put.status, 204, await put.text())
    assert.ok((await rbd.list(pools!.images)).includes(id))
    assert.deepEqual(await rbd.snapshots(pools!.images, id), ['snap'])

    const shown = await call(b.url, 'GET', `/image/v2/images/${id}`, { token })
    assert.equal(shown.body.status, 'active')
    assert.equal(shown.body.size, bytes.length)
    assert.equal(shown.body.checksum, createHash('md5').update(bytes).digest('hex'))
    const got = await fetch(`${b.url}/image/v2/images/${id}/file`, { headers: { 'x-auth-token': token } })
    assert.equal(got.status, 200)
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(bytes), 'process B served other bytes than process A stored')

    assert.equal((await call(b.url, 'DELETE', `/image/v2/images/${id}`, { token })).status, 204)
    assert.ok(!(await rbd.list(pools!.images)).includes(id), 'the RBD image outlived the image')
  })

  it('start-up with Ceph configured but unusable is one clear error line', async (t) => {
    if (typeof ceph === 'string') return t.skip(ceph)
    const cephCluster = ceph
    const dir = mkdtempSync(join(tmpdir(), 'pcc-ceph-start-'))
    const badConf = join(dir, 'unreachable.conf')
    // Monitors nobody listens on: nothing answers, so the check gives up after its mount timeout.
    writeFileSync(badConf, readFileSync(cephCluster.conf, 'utf8').replace(/^mon host = .*$/m, `mon host = [v2:127.0.0.1:${await freePort()},v1:127.0.0.1:${await freePort()}]`))
    // A user the cluster knows, with no right on any pool.
    const nobodyKeyring = join(dir, 'nobody.keyring')
    execFileSync('ceph', ['-c', cephCluster.conf, '--id', cephCluster.user, 'auth', 'get-or-create', 'client.pcc-nobody', 'mon', 'profile rbd', '-o', nobodyKeyring])
    const cases: [Record<string, string>, RegExp][] = [
      [{ PCC_CEPH_CONF: join(dir, 'missing.conf') }, /^pcc-server: error: PCC_CEPH_CONF: cannot read .*missing\.conf: ENOENT\n$/],
      [{ PCC_CEPH_KEYRING: join(dir, 'missing.keyring') }, /^pcc-server: error: PCC_CEPH_KEYRING: cannot read .*missing\.keyring: ENOENT\n$/],
      [{ PCC_CEPH_IMAGES_POOL: 'no-such-pool' }, /^pcc-server: error: the Ceph pool no-such-pool does not exist: create it with `ceph osd pool create no-such-pool && rbd pool init no-such-pool`\n$/],
      [{ PCC_CEPH_CONF: badConf }, /^pcc-server: error: Ceph is not reachable with .*unreachable\.conf as client\.admin: rbd ls .*\n$/],
      [{ PCC_CEPH_USER: 'pcc-nobody', PCC_CEPH_KEYRING: nobodyKeyring }, /^pcc-server: error: client\.pcc-nobody may not use the Ceph pool \S+ \(.*\): give it `profile rbd pool=\S+` \(docs\/ceph\.md\)\n$/],
    ]
    try {
      // All at once: the unreachable monitors take the check's whole timeout, which the other starts overlap. Each
      // start ends before the directory goes, and the first failure is the test's.
      const ends = await Promise.allSettled(
        cases.map(async ([override, expected]) => {
          const server = spawnServer({ ...env, ...override, PCC_DATA_DIR: join(dir, `data-${randomBytes(3).toString('hex')}`), PCC_LISTEN: `127.0.0.1:${await freePort()}`, PCC_ADMIN_PASSWORD: 'start-up-test-password' })
          assert.equal(await server.exited(), 1, server.stderr())
          assert.match(server.stderr(), expected)
        }),
      )
      for (const end of ends) if (end.status === 'rejected') throw end.reason
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
