/**
 * No bytes lost on a control-plane crash: a real pcc-server process is SIGKILLed while it copies an image into a
 * new volume; started again on the same data dir, it makes the volume again from the start (the half-written
 * `.part` file never counts) and the volume holds exactly the image's bytes, and nothing of the cut copy stays
 * (the image's bytes in their scratch directory included). A volume written before the crash keeps its bytes.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCluster, type Cluster } from '../../src/testkit/cluster.js'
import { ComputeClient, login, until } from '../../src/testkit/compute-api.js'

const MIB = 1024 * 1024

describe('a control-plane crash loses no volume bytes', () => {
  let cluster: Cluster
  let scratch: string
  before(async () => {
    cluster = await startCluster({ size: 1, dialect: 'sqlite', env: { PCC_SIMULATED_HOSTS: '0', PCC_TASK_LEASE_SECONDS: '2' } })
    scratch = mkdtempSync(join(tmpdir(), 'pcc-crash-'))
  })
  after(async () => {
    await cluster?.close()
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  it('SIGKILLed in the middle of a copy, restarted: the volume is made again and holds the image', async () => {
    const node = cluster.nodes[0]
    const session = await login(node.url, cluster.adminPassword)
    const api = new ComputeClient(node.url, session.token)
    // 192 MiB of random bytes: not compressible, so the copy takes long enough to be cut.
    const raw = join(scratch, 'image.raw')
    writeFileSync(raw, randomBytes(192 * MIB))
    const image = (await api.other('POST', '/image/v2/images', { name: 'big', disk_format: 'raw', container_format: 'bare' })).body
    const put = await fetch(`${node.url}/image/v2/images/${image.id}/file`, { method: 'PUT', headers: { 'x-auth-token': session.token, 'content-type': 'application/octet-stream' }, body: readFileSync(raw) })
    assert.equal(put.status, 204)

    const before = (await api.other('POST', '/volume/v3/volumes', { volume: { size: 1, name: 'written-before' } })).body.volume.id as string
    await until('the first volume', 30_000, async () => ((await api.other('GET', `/volume/v3/volumes/${before}`)).body.volume.status === 'available' ? true : undefined))
    const beforeFile = join(node.dataDir, 'volumes', `volume-${before}`)
    assert.equal(spawnSync('qemu-io', ['-f', 'raw', beforeFile, '-c', 'write -P 0x5d 0 4M']).status, 0)

    const created = await api.other('POST', '/volume/v3/volumes', { volume: { size: 1, imageRef: image.id, name: 'cut' } })
    assert.equal(created.status, 202)
    const id = created.body.volume.id as string
    const file = join(node.dataDir, 'volumes', `volume-${id}`)
    await until('the copy under way', 30_000, async () => (existsSync(`${file}.part`) ? true : undefined), 5)
    await cluster.kill(0)
    assert.equal(existsSync(file), false, 'a volume cut in its copy never has its final name')
    await cluster.restart(0)

    const session2 = await login(node.url, cluster.adminPassword)
    const api2 = new ComputeClient(node.url, session2.token)
    await until('the volume made after the restart', 90_000, async () => {
      const status = (await api2.other('GET', `/volume/v3/volumes/${id}`)).body.volume.status
      if (status === 'error') throw new Error('the volume went to error')
      return status === 'available' ? true : undefined
    })
    const same = spawnSync('qemu-img', ['compare', '-f', 'raw', '-F', 'raw', file, raw], { encoding: 'utf8' })
    assert.equal(same.status, 0, same.stdout + same.stderr)
    assert.deepEqual(readdirSync(join(node.dataDir, 'volumes')).filter((f) => f.endsWith('.part')), [], 'no half copy left')
    assert.deepEqual(readdirSync(join(node.dataDir, 'volumes')).filter((f) => f.startsWith('.scratch-')), [], 'no copy of the image left from the cut copy')
    assert.equal(spawnSync('qemu-io', ['-f', 'raw', beforeFile, '-c', 'read -P 0x5d 0 4M']).status, 0, 'the older volume kept its bytes')
  })
})
