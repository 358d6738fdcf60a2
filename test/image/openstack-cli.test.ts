/**
 * End to end with the real `openstack` client (python3-openstackclient): the catalog leads it to the image and
 * block storage services, and its everyday commands work, with servers too (two simulated hosts): volumes added
 * to and removed from servers, boot from volume, blank volumes at create, and server images. A missing client
 * fails the test: CI installs it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { eventually } from './support.js'
import { defaultImageName } from '../../src/server/image/default-image.js'

describe('openstack CLI against the image and block storage services', { timeout: 600_000 }, () => {
  let server: TestServer
  let env: Record<string, string>
  let dir: string

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '50' } })
    env = adminEnv(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-cli-'))
  })
  after(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  async function volumeStatus(name: string, status: string) {
    return eventually(async () => {
      const shown = await openstackJson<{ status: string }>(['volume', 'show', name], env)
      return shown.status === status ? shown : undefined
    }, 60_000, `volume ${name} ${status}`)
  }

  it('image create --file, save, list, show, set and delete', async () => {
    const file = join(dir, 'disk.raw')
    const data = randomBytes(3 * 1024 * 1024 + 5)
    writeFileSync(file, data)
    const created = await openstackJson<{ id: string; status: string }>(['image', 'create', '--file', file, '--disk-format', 'raw', '--container-format', 'bare', 'cli-image'], env)
    assert.ok(created.id)
    const saved = join(dir, 'saved.raw')
    const save = await openstack(['image', 'save', '--file', saved, 'cli-image'], env)
    assert.equal(save.code, 0, save.stderr)
    assert.ok(readFileSync(saved).equals(data), 'image save returns the uploaded bytes')
    const list = await openstackJson<{ Name: string; Status: string }[]>(['image', 'list'], env)
    assert.ok(list.some((i) => i.Name === 'cli-image' && i.Status === 'active'))
    assert.ok(list.some((i) => i.Name === defaultImageName()))
    const set = await openstack(['image', 'set', '--name', 'cli-image-2', '--property', 'os_distro=debian', '--min-disk', '1', 'cli-image'], env)
    assert.equal(set.code, 0, set.stderr)
    const shown = await openstackJson<{ name: string; min_disk: number; properties: Record<string, unknown>; size: number }>(['image', 'show', 'cli-image-2'], env)
    assert.equal(shown.name, 'cli-image-2')
    assert.equal(shown.min_disk, 1)
    assert.equal(shown.properties.os_distro, 'debian')
    assert.equal(shown.size, data.length)
    const del = await openstack(['image', 'delete', 'cli-image-2'], env)
    assert.equal(del.code, 0, del.stderr)
    const gone = await openstack(['image', 'show', 'cli-image-2'], env)
    assert.notEqual(gone.code, 0)
  })

  it('volume create --size and --image, list, show, set, delete; snapshots', async () => {
    const blank = await openstackJson<{ id: string; size: number }>(['volume', 'create', '--size', '1', 'cli-vol'], env)
    assert.equal(blank.size, 1)
    await volumeStatus('cli-vol', 'available')
    const fromImage = await openstackJson<{ id: string }>(['volume', 'create', '--size', '1', '--image', defaultImageName(), 'cli-boot'], env)
    const boot = await volumeStatus('cli-boot', 'available')
    assert.equal((boot as unknown as { bootable: string }).bootable, 'true')
    assert.ok(fromImage.id)
    const list = await openstackJson<{ Name: string; Status: string }[]>(['volume', 'list'], env)
    assert.deepEqual(list.map((v) => v.Name).sort(), ['cli-boot', 'cli-vol'])
    const set = await openstack(['volume', 'set', '--name', 'cli-vol-2', '--property', 'tier=gold', '--size', '2', 'cli-vol'], env)
    assert.equal(set.code, 0, set.stderr)
    const grown = await volumeStatus('cli-vol-2', 'available')
    assert.equal((grown as unknown as { size: number }).size, 2)
    assert.deepEqual((grown as unknown as { properties: Record<string, string> }).properties, { tier: 'gold' })

    const snap = await openstackJson<{ id: string }>(['volume', 'snapshot', 'create', '--volume', 'cli-vol-2', 'cli-snap'], env)
    assert.ok(snap.id)
    await eventually(async () => {
      const snaps = await openstackJson<{ Name: string; Status: string }[]>(['volume', 'snapshot', 'list'], env)
      return snaps.some((s) => s.Name === 'cli-snap' && s.Status === 'available')
    }, 60_000, 'snapshot available')
    const delSnap = await openstack(['volume', 'snapshot', 'delete', 'cli-snap'], env)
    assert.equal(delSnap.code, 0, delSnap.stderr)
    await eventually(async () => (await openstackJson<unknown[]>(['volume', 'snapshot', 'list'], env)).length === 0, 60_000, 'snapshot deleted')

    for (const name of ['cli-vol-2', 'cli-boot']) {
      const del = await openstack(['volume', 'delete', name], env)
      assert.equal(del.code, 0, del.stderr)
    }
    await eventually(async () => (await openstackJson<unknown[]>(['volume', 'list'], env)).length === 0, 60_000, 'volumes deleted')
  })

  it('volume type create --encryption-provider luks, show; a volume of it is encrypted', async () => {
    const created = await openstack(['volume', 'type', 'create', '--encryption-provider', 'luks', '--encryption-cipher', 'aes-xts-plain64', '--encryption-key-size', '512', '--encryption-control-location', 'front-end', 'cli-encrypted'], env)
    assert.equal(created.code, 0, created.stderr)
    const shown = await openstackJson<{ encryption: Record<string, unknown> }>(['volume', 'type', 'show', '--encryption-type', 'cli-encrypted'], env)
    assert.deepEqual({ provider: shown.encryption.provider, cipher: shown.encryption.cipher, key_size: shown.encryption.key_size, control_location: shown.encryption.control_location }, { provider: 'luks', cipher: 'aes-xts-plain64', key_size: 512, control_location: 'front-end' })
    const volume = await openstack(['volume', 'create', '--size', '1', '--type', 'cli-encrypted', 'cli-encrypted-volume'], env)
    assert.equal(volume.code, 0, volume.stderr)
    assert.equal((await volumeStatus('cli-encrypted-volume', 'available')) && (await openstackJson<{ encrypted: boolean }>(['volume', 'show', 'cli-encrypted-volume'], env)).encrypted, true)
    // Not while a volume of the type exists (Cinder's 400), then the volume goes and so can the encryption.
    const refused = await openstack(['volume', 'type', 'unset', '--encryption-type', 'cli-encrypted'], env)
    assert.notEqual(refused.code, 0)
    assert.equal((await openstackJson<{ encryption: Record<string, unknown> }>(['volume', 'type', 'show', '--encryption-type', 'cli-encrypted'], env)).encryption.provider, 'luks')
    assert.equal((await openstack(['volume', 'delete', 'cli-encrypted-volume'], env)).code, 0)
    await eventually(async () => (await openstack(['volume', 'show', 'cli-encrypted-volume'], env)).code !== 0, 60_000, 'the volume to go')
    const unset = await openstack(['volume', 'type', 'unset', '--encryption-type', 'cli-encrypted'], env)
    assert.equal(unset.code, 0, unset.stderr)
    assert.deepEqual((await openstackJson<{ encryption?: unknown }>(['volume', 'type', 'show', '--encryption-type', 'cli-encrypted'], env)).encryption ?? {}, {})
  })

  it("volume create --image holds the image's bytes; image create --volume makes an image of the volume's", async () => {
    const raw = join(dir, 'patterned.raw')
    const data = Buffer.concat([Buffer.alloc(1024 * 1024, 0), randomBytes(2 * 1024 * 1024)])
    writeFileSync(raw, data)
    assert.equal((await openstack(['image', 'create', '--file', raw, '--disk-format', 'raw', '--container-format', 'bare', 'cli-src'], env)).code, 0)
    const vol = await openstackJson<{ id: string }>(['volume', 'create', '--size', '1', '--image', 'cli-src', 'cli-data'], env)
    await volumeStatus('cli-data', 'available')
    const bytes = readFileSync(join(server.dataDir, 'volumes', `volume-${vol.id}`))
    assert.equal(bytes.length, 1024 ** 3)
    assert.ok(bytes.subarray(0, data.length).equals(data), "the volume starts with the image's bytes")
    assert.ok(bytes.subarray(data.length, data.length + 1024 * 1024).every((b) => b === 0))

    const made = await openstack(['image', 'create', '--volume', 'cli-data', '--disk-format', 'qcow2', 'cli-from-volume'], env)
    assert.equal(made.code, 0, made.stderr)
    await eventually(async () => (await openstackJson<{ status: string }>(['image', 'show', 'cli-from-volume'], env)).status === 'active', 60_000, 'the image of the volume')
    await volumeStatus('cli-data', 'available')
    const saved = join(dir, 'from-volume.qcow2')
    assert.equal((await openstack(['image', 'save', '--file', saved, 'cli-from-volume'], env)).code, 0)
    // Same bytes: qemu-img compares the 1 GiB image with the 3 MiB file (the rest must be zeros).
    const compared = spawnSync('qemu-img', ['compare', '-f', 'qcow2', '-F', 'raw', saved, raw], { encoding: 'utf8' })
    assert.equal(compared.status, 0, compared.stdout + compared.stderr)
    for (const args of [['image', 'delete', 'cli-from-volume'], ['image', 'delete', 'cli-src'], ['volume', 'delete', 'cli-data']]) assert.equal((await openstack(args, env)).code, 0)
  })

  it('server add/remove volume, server create --volume and --block-device, server image create', async () => {
    const ok = async (args: string[]) => {
      const r = await openstack(args, env, 180_000)
      assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr}`)
      return r.stdout
    }
    // `--wait` prints progress before the -f json document.
    const created = async (args: string[]) => {
      const out = await ok([...args, '-f', 'json'])
      return JSON.parse(out.slice(out.indexOf('{'))) as Record<string, unknown>
    }
    const attachedIds = async (serverName: string) => {
      const shown = await openstackJson<{ volumes_attached: unknown }>(['server', 'show', serverName], env)
      return JSON.stringify(shown.volumes_attached)
    }

    // Boot from a bootable volume made from the image.
    await ok(['volume', 'create', '--size', '1', '--image', defaultImageName(), 'cli-root'])
    const root = await volumeStatus('cli-root', 'available')
    const bfv = await created(['server', 'create', '--volume', 'cli-root', '--flavor', 'm1.tiny', '--wait', 'cli-bfv'])
    assert.equal(bfv.status, 'ACTIVE')
    const rootInUse = (await volumeStatus('cli-root', 'in-use')) as unknown as { attachments: { server_id: string; device: string }[] }
    assert.deepEqual(rootInUse.attachments.map((a) => [a.server_id, a.device]), [[bfv.id, '/dev/vda']])
    assert.ok((await attachedIds('cli-bfv')).includes((root as unknown as { id: string }).id), 'the server lists its root volume')

    // Add and remove a data volume.
    const data = await openstackJson<{ id: string }>(['volume', 'create', '--size', '1', 'cli-data'], env)
    await volumeStatus('cli-data', 'available')
    await ok(['server', 'add', 'volume', 'cli-bfv', 'cli-data'])
    const inUse = (await volumeStatus('cli-data', 'in-use')) as unknown as { attachments: { server_id: string; device: string }[] }
    assert.deepEqual(inUse.attachments.map((a) => [a.server_id, a.device]), [[bfv.id, '/dev/vdb']])
    assert.ok((await attachedIds('cli-bfv')).includes(data.id))
    await ok(['server', 'remove', 'volume', 'cli-bfv', 'cli-data'])
    await volumeStatus('cli-data', 'available')
    await eventually(async () => !(await attachedIds('cli-bfv')).includes(data.id), 60_000, 'volume gone from the server')

    // A blank volume made at create, deleted with the server.
    const blank = await created([
      'server', 'create', '--image', defaultImageName(), '--flavor', 'm1.tiny',
      '--block-device', 'source_type=blank,destination_type=volume,volume_size=1,delete_on_termination=true', '--wait', 'cli-blank',
    ])
    assert.equal(blank.status, 'ACTIVE')
    const volumes = await openstackJson<{ ID: string; Status: string; Size: number; 'Attached to': { server_id: string; device: string }[] }[]>(['volume', 'list'], env)
    const made = volumes.find((v) => v['Attached to'].some((a) => a.server_id === blank.id && a.device === '/dev/vdb'))
    assert.ok(made, JSON.stringify(volumes))
    assert.equal(made.Status, 'in-use')
    assert.equal(made.Size, 1)
    assert.ok((await attachedIds('cli-blank')).includes(made.ID))

    // A server image becomes active.
    await ok(['server', 'image', 'create', '--name', 'cli-server-image', '--wait', 'cli-blank'])
    const image = await openstackJson<{ status: string; size: number }>(['image', 'show', 'cli-server-image'], env)
    assert.equal(image.status, 'active')
    assert.ok(image.size > 0)
    const saved = join(dir, 'server-image.qcow2')
    assert.equal((await openstack(['image', 'save', '--file', saved, 'cli-server-image'], env)).code, 0)
    assert.equal(readFileSync(saved).length, image.size)

    await ok(['server', 'delete', '--wait', 'cli-bfv', 'cli-blank'])
    await volumeStatus('cli-root', 'available')
    await eventually(async () => (await openstack(['volume', 'show', made.ID], env)).code !== 0, 60_000, 'the blank volume deleted with its server')
    for (const name of ['cli-root', 'cli-data']) assert.equal((await openstack(['volume', 'delete', name], env)).code, 0)
    assert.equal((await openstack(['image', 'delete', 'cli-server-image'], env)).code, 0)
  })
})
