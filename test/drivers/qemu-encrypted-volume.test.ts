/**
 * Encrypted volumes on a real guest (docs/block-storage.md, "Encrypted volumes"): a blank volume with a LUKS key is
 * hot-plugged; the driver formats it (no header yet) and opens it with QEMU's luks driver, and the guest writes a
 * known string to its disk. Detached, the backend's bytes (the file the NBD export serves) hold the LUKS header and
 * not the string. Attached again, the guest reads the string back: the guest sees plaintext, the backend
 * ciphertext. A wrong key fails the attach and leaves the bytes as they were (never reformatted).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import type { NbdConnectionInfo, VolumeConnection } from '../../src/contracts/host/compute-driver.js'
import { volumeNames } from '../../src/host/compute/qemu/volumes.js'
import { forEachNewDisk, servedVolume, startVolumeGuest, type VolumeGuest } from '../../src/testkit/qemu-harness.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'

const missing = realGuestsMissing()
const MARK = 'PCC-PLAINTEXT-MARK-7F3A9C'
const LUKS_MAGIC = Buffer.from([0x4c, 0x55, 0x4b, 0x53, 0xba, 0xbe])

/**
 * The guest: for each new disk, reads its first bytes; when they hold the mark it says so, else it writes the mark
 * there (synced) and says that.
 */
const SCRIPT = forEachNewDisk(`
    got=$(dd if=/dev/$n bs=512 count=1 2>/dev/null | tr -dc 'A-Z0-9-')
    case "$got" in
      *${MARK}*) echo "pcc-guest: $n reads ${MARK}" ;;
      *) printf '%s' '${MARK}' | dd of=/dev/$n bs=512 conv=sync 2>/dev/null; sync; echo "pcc-guest: $n wrote the mark" ;;
    esac
`)

describe('encrypted volumes on a real guest', { skip: missing, timeout: 600_000 }, () => {
  let guest: VolumeGuest
  const encrypted = (v: VolumeConnection, passphrase: string): VolumeConnection => {
    const info = v.connection as NbdConnectionInfo
    return { ...v, connection: { ...info, data: { ...info.data, encryption: { format: 'luks', cipher: 'aes-xts-plain64', key_size: 256, passphrase } } } }
  }

  before(async () => {
    guest = await startVolumeGuest('qemu-luks', '00000000-0000-4000-8000-000000000a07', SCRIPT)
  })
  after(() => guest?.close())

  it('keeps ciphertext on the backend while the guest reads and writes plaintext', async () => {
    const passphrase = randomBytes(32).toString('base64')
    const { driver, serverId, qmp, waitConsole } = guest
    const volume = encrypted(await servedVolume(guest.exports, guest.work), passphrase)
    const backendFile = join(guest.work, `volume-${volume.volumeId}.raw`)
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
