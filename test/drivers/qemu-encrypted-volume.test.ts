/**
 * Encrypted volumes on a real guest (docs/block-storage.md, "Encrypted volumes"): a blank volume with a LUKS key is
 * hot-plugged; the driver formats it (no header yet) and opens it with QEMU's luks driver, and the guest writes a
 * known string to its disk. Detached, the backend's bytes (the file the NBD export serves) hold the LUKS header and
 * not the string. Attached again, the guest reads the string back: the guest sees plaintext, the backend
 * ciphertext. A wrong key fails the attach and leaves the bytes as they were (never reformatted).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { GuestSpec, NbdConnectionInfo, VolumeConnection } from '../../src/contracts/host/compute-driver.js'
import { QemuDriver } from '../../src/host/compute/qemu/qemu-driver.js'
import { QmpClient } from '../../src/host/compute/qemu/qmp.js'
import { volumeNames } from '../../src/host/compute/qemu/volumes.js'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { metadataFiles } from '../../src/server/metadata/documents.js'
import { servedVolume } from '../../src/testkit/qemu-harness.js'
import { facts, fileImage, guestImage, killQemusUnder, realGuestsMissing } from '../../src/testkit/qemu.js'

const missing = realGuestsMissing()
const MARK = 'PCC-PLAINTEXT-MARK-7F3A9C'
const LUKS_MAGIC = Buffer.from([0x4c, 0x55, 0x4b, 0x53, 0xba, 0xbe])

/**
 * The guest (busybox ash): for each new disk, reads its first bytes; when they hold the mark it says so, else it
 * writes the mark there (synced) and says that.
 */
const SCRIPT = `#!/bin/sh
seen=""
while true; do
  for d in /sys/block/vd[b-z]; do
    [ -e "$d" ] || continue
    n=\${d##*/}
    case " $seen " in *" $n "*) continue ;; esac
    seen="$seen $n"
    got=$(dd if=/dev/$n bs=512 count=1 2>/dev/null | tr -dc 'A-Z0-9-')
    case "$got" in
      *${MARK}*) echo "pcc-guest: $n reads ${MARK}" ;;
      *) printf '%s' '${MARK}' | dd of=/dev/$n bs=512 conv=sync 2>/dev/null; sync; echo "pcc-guest: $n wrote the mark" ;;
    esac
  done
  for n in $seen; do [ -e /sys/block/$n ] || seen=$(echo " $seen " | sed "s/ $n / /"); done
  sleep 1
done
`

describe('encrypted volumes on a real guest', { skip: missing, timeout: 600_000 }, () => {
  let work: string
  let driver: QemuDriver
  let exports: ExportManager
  const serverId = '00000000-0000-4000-8000-000000000a07'

  const consoleCount = async (pattern: RegExp) => [...(await driver.consoleOutput(serverId).catch(() => '')).matchAll(new RegExp(pattern.source, 'g'))].length
  const waitConsole = async (pattern: RegExp, count = 1, ms = 180_000): Promise<void> => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      if ((await consoleCount(pattern)) >= count) return
      await new Promise((r) => setTimeout(r, 500))
    }
    throw new Error(`${pattern} not seen ${count} times; console:\n${(await driver.consoleOutput(serverId).catch(() => '')).slice(-2000)}`)
  }
  const qmp = async <T>(command: string, args?: Record<string, unknown>): Promise<T> => {
    const client = await QmpClient.connect(join(driver.options.root, 'run/pcc', `${serverId}.qmp`))
    try {
      return await client.execute<T>(command, args)
    } finally {
      client.close()
    }
  }
  const encrypted = (v: VolumeConnection, passphrase: string): VolumeConnection => {
    const info = v.connection as NbdConnectionInfo
    return { ...v, connection: { ...info, data: { ...info.data, encryption: { format: 'luks', cipher: 'aes-xts-plain64', key_size: 256, passphrase } } } }
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'pcc-qemu-luks-'))
    exports = new ExportManager(join(work, 'exports'))
    const image = await guestImage()
    const guest = fileImage('guest-image', image.disk.path, 'qcow2')
    driver = new QemuDriver({
      hostname: 'qemu-luks', root: join(work, 'host'), vcpus: 2, memoryMb: 4096, diskGb: 20, shutdownTimeoutMs: 20_000,
      images: { open: async () => createReadStream(image.disk.path) },
    })
    await driver.start()
    const spec: GuestSpec = {
      serverId, instanceName: 'instance-00000a07', imageId: guest.id, hostname: 'vm', userData: null, image: guest,
      flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
      configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId, SCRIPT))).map(([k, v]) => [k, v.toString('base64')])),
    }
    await driver.spawn(spec)
    await waitConsole(/pcc-guest: ready/)
  })
  after(async () => {
    await killQemusUnder(join(work, 'host'))
    await exports.converge([])
    rmSync(work, { recursive: true, force: true })
  })

  it('keeps ciphertext on the backend while the guest reads and writes plaintext', async () => {
    const passphrase = randomBytes(32).toString('base64')
    const volume = encrypted(await servedVolume(exports, work), passphrase)
    const backendFile = join(work, `volume-${volume.volumeId}.raw`)
    const names = volumeNames(volume.volumeId)

    await driver.attachVolume(serverId, volume)
    const nodes = await qmp<{ 'node-name': string; drv: string }[]>('query-named-block-nodes', { flat: true })
    assert.equal(nodes.find((n) => n['node-name'] === names.format)?.drv, 'luks', 'the guest reads through a luks node')
    await waitConsole(/pcc-guest: vdb wrote the mark/)
    await driver.detachVolume(serverId, volume.volumeId)
    const objects = (await qmp<{ name: string }[]>('qom-list', { path: '/objects' })).map((o) => o.name)
    assert.ok(!objects.includes(names.secret), 'the secret goes with the volume')

    const bytes = readFileSync(backendFile)
    assert.deepEqual(bytes.subarray(0, 6), LUKS_MAGIC, 'the backend holds a LUKS header')
    assert.equal(bytes.includes(MARK), false, 'the backend holds no plaintext')
    assert.equal(bytes.includes(passphrase), false, 'nor the passphrase')

    // A wrong key opens nothing and changes nothing.
    const wrong = encrypted(volume, randomBytes(32).toString('base64'))
    await assert.rejects(driver.attachVolume(serverId, wrong), /could not be attached/)
    assert.deepEqual(readFileSync(backendFile), bytes, 'the bytes are as they were')

    await driver.attachVolume(serverId, volume)
    await waitConsole(new RegExp(`pcc-guest: vdb reads ${MARK}`))
    await driver.detachVolume(serverId, volume.volumeId)
  })
})
