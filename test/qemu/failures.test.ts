/**
 * What goes wrong on a QEMU host ends in ERROR with a fault that says what happened, the server's resources
 * given back (its claim, its port), and nothing left on the host: no QEMU, no instance directory, no socket, no
 * tap, no partial image. Three hosts: a sound one, one without its QEMU binary, one whose image cache is full.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from '../../src/testkit/compute-api.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { b64, NANO, rests, sees } from './helpers.js'

const missing = realGuestsMissing() ?? (process.getuid?.() !== 0 ? 'not root (a small file system is mounted for the full-disk case)' : undefined)

describe('failures on QEMU hosts', { skip: missing, timeout: 600_000 }, () => {
  let cloud: QemuCloud
  let image: string
  let network: string
  const mounts: string[] = []
  const work = mkdtempSync(join(tmpdir(), 'pcc-qemu-failures-'))
  before(async () => {
    cloud = await startQemuCloud({
      hosts: 3,
      qemu: (i) => (i === 1 ? { binary: 'qemu-system-not-installed', accel: 'tcg' } : {}),
      prepareRoot: (root, i) => {
        if (i !== 2) return
        const cache = join(root, 'var/lib/pcc/images')
        mkdirSync(cache, { recursive: true })
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', cache])
        mounts.push(cache)
      },
    })
    image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id
    const net = await cloud.call('POST', '/network/v2.0/networks', { network: { name: 'lan' } })
    network = net.body.network.id
    await cloud.call('POST', '/network/v2.0/subnets', { subnet: { network_id: network, ip_version: 4, cidr: '10.77.0.0/24', name: 'lan-subnet' } })
  })
  after(async () => {
    for (const m of mounts) execFileSync('umount', ['-l', m])
    await cloud?.close()
    rmSync(work, { recursive: true, force: true })
  })

  /** An image through the image API with these bytes. */
  const upload = async (name: string, bytes: Buffer): Promise<string> => {
    const created = await cloud.api.other('POST', '/image/v2/images', { name, disk_format: 'qcow2', container_format: 'bare' })
    const res = await fetch(`${cloud.server.url}/image/v2/images/${created.body.id}/file`, { method: 'PUT', headers: { 'x-auth-token': cloud.adminToken, 'content-type': 'application/octet-stream' }, body: bytes })
    assert.equal(res.status, 204)
    return created.body.id as string
  }
  const ports = async (serverId: string) => ((await cloud.call('GET', `/network/v2.0/ports?device_id=${serverId}`)).body.ports as unknown[]).length
  const taps = () => readdirSync('/sys/class/net').filter((n) => n.startsWith('tap'))

  /** Creates a server forced onto a host, waits for ERROR and checks everything was given back. */
  const fails = async (name: string, host: number, imageRef: string, fault: RegExp, withPort = false) => {
    const tapsBefore = taps()
    const { id } = await cloud.api.create({ name, imageRef, flavorRef: NANO, networks: withPort ? [{ uuid: network }] : 'none', availability_zone: `nova:qemu-host-${host}` })
    const s = await rests(cloud.api, id, 'ERROR')
    assert.match(s.fault.message, fault)
    assert.equal(s['OS-EXT-SRV-ATTR:host'], null, 'no host holds it')
    const root = cloud.hosts[host].root
    assert.deepEqual(qemuLeftovers(root, id), [], 'nothing of the guest on the host')
    assert.deepEqual(readdirSync(join(root, 'var/lib/pcc/images')).filter((f) => f.endsWith('.part')), [], 'no partial image')
    assert.deepEqual(taps(), tapsBefore, 'no tap left')
    assert.equal(await ports(id), 0, 'its port was given back')
    const hyps = (await cloud.api.at('2.28').call('GET', '/os-hypervisors/detail')).body.hypervisors as { vcpus_used: number }[]
    assert.deepEqual(hyps.map((h) => h.vcpus_used), [0, 0, 0], 'no claim left')
    return id
  }

  it('an image that is not a disk', async () => {
    const notADisk = await upload('not-a-disk', Buffer.from('these bytes are no qcow2 disk\n'))
    await fails('bad-image', 0, notADisk, /is not a valid qcow2 disk/, true)
  })

  it('a host without its QEMU binary', async () => {
    await fails('no-qemu', 1, image, /qemu-system-not-installed is not installed/)
  })

  it('a root disk that cannot be made (the image is larger than the flavor)', async () => {
    const file = join(work, 'big.qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', file, '2G'])
    await fails('too-big', 0, await upload('two-gig', readFileSync(file)), /Flavor's disk is too small for requested image/)
  })

  it('a host whose disk is full', async () => {
    await fails('no-space', 2, image, /out of disk space|No space left/)
  })

  it('a guest that crashes: ERROR with a fault saying so once reconciliation sees it; deleting leaves nothing', async () => {
    const tapsBefore = taps()
    const { id } = await cloud.api.create({
      name: 'crasher', imageRef: image, flavorRef: NANO, networks: [{ uuid: network }], availability_zone: 'nova:qemu-host-0',
      user_data: b64('#!/bin/sh\nsleep 1\necho c > /proc/sysrq-trigger\n'),
    })
    await rests(cloud.api, id, 'ACTIVE')
    await sees(cloud.api, id, /Kernel panic/)
    const s = await until('reconciliation to see the crash', 60_000, async () => {
      await cloud.server.deps.conductor.reconcile()
      const v = await cloud.api.server(id)
      return v?.status === 'ERROR' ? v : undefined
    }, 1000)
    assert.match(s.fault.message, /crashed/)
    assert.equal(s['OS-EXT-STS:power_state'], 6)
    assert.equal((await cloud.api.call('DELETE', `/servers/${id}`)).status, 204)
    await until('deleted', 60_000, async () => ((await cloud.api.server(id)) === undefined ? true : undefined), 500)
    assert.deepEqual(qemuLeftovers(cloud.hosts[0].root, id), [])
    assert.deepEqual(taps(), tapsBefore, 'its tap went with its QEMU')
  })
})
