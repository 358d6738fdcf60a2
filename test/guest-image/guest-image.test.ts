/**
 * The pcc guest image, booted under QEMU directly: what its init prints is the contract the driver's tests and the
 * other data-plane parts rely on (docs/qemu.md, "The guest image").
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { cpioArchive } from '../../src/guest-image/cpio.js'
import { writeConfigDrive } from '../../src/host/compute/qemu/config-drive.js'
import { bareGuest, guestImage, realGuestsMissing, type BareGuest } from '../../src/testkit/qemu.js'
import type { GuestImage } from '../../src/guest-image/build.js'

const missing = realGuestsMissing()
const BOOT_MS = 60_000

describe('the cpio writer', () => {
  it('writes newc archives that cpio(1) lists and extracts', { skip: spawnMissing('cpio') }, () => {
    const archive = cpioArchive([
      { path: 'etc', type: 'dir' },
      { path: 'etc/motd', type: 'file', data: Buffer.from('hello\n') },
      { path: 'bin', type: 'dir' },
      { path: 'bin/run', type: 'file', data: Buffer.from('#!/bin/sh\n'), mode: 0o755 },
      { path: 'bin/sh', type: 'symlink', target: 'busybox' },
    ])
    const listing = execFileSync('cpio', ['-itv', '--quiet'], { input: archive }).toString()
    assert.match(listing, /^drwxr-xr-x .* etc$/m)
    assert.match(listing, /^-rw-r--r-- .* 6 .* etc\/motd$/m)
    assert.match(listing, /^-rwxr-xr-x .* bin\/run$/m)
    assert.match(listing, /^lrwxrwxrwx .* bin\/sh -> busybox$/m)
  })
})

function spawnMissing(cmd: string): string | false {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' })
    return false
  } catch {
    return `${cmd} is not installed`
  }
}

describe('the pcc guest image', { skip: missing }, () => {
  let image: GuestImage
  let work: string
  before(async () => {
    image = await guestImage()
    work = mkdtempSync(join(tmpdir(), 'pcc-guest-image-test-'))
  })
  after(() => rmSync(work, { recursive: true, force: true }))

  it('is cached: a second build answers the same files at once', async () => {
    const { buildGuestImage } = await import('../../src/guest-image/build.js')
    const started = Date.now()
    const again = await buildGuestImage()
    assert.equal(again.key, image.key)
    assert.equal(again.disk.sha512, image.disk.sha512)
    assert.ok(Date.now() - started < 5_000, 'no rebuild')
    assert.ok(image.modules.includes('virtio_blk.ko') && image.modules.includes('isofs.ko'))
  })

  it('boots, counts boots on its own disk, reads the config drive, runs #! user data and powers off on the ACPI button', async () => {
    const overlay = join(work, 'overlay.qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', image.disk.path, overlay, '1G'])
    const drive = join(work, 'config.iso')
    await writeConfigDrive(drive, {
      'openstack/latest/meta_data.json': JSON.stringify({
        uuid: 'c0ffee00-0000-4000-8000-000000000001', name: 'vm-one', hostname: 'vm-one.novalocal',
        public_keys: { mykey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITest me@example' }, meta: { role: 'web' }, admin_pass: 's3cret',
      }),
      'openstack/latest/user_data': '#!/bin/sh\necho "pcc-guest: from user data $(cat /mnt/disk/pcc/boot-count)"\necho written-at-boot-$(cat /mnt/disk/pcc/boot-count) > /mnt/disk/files/note\nsync\n',
      'openstack/latest/network_data.json': JSON.stringify({ links: [], networks: [], services: [] }),
    })
    let guest: BareGuest | undefined
    try {
      guest = bareGuest({ disk: overlay, diskFormat: 'qcow2', configDrive: drive })
      await guest.waitFor(/pcc-guest: user-data exit 0/, BOOT_MS)
      const first = guest.console()
      for (const line of [
        /pcc-guest: userspace up/, /pcc-guest: disk \/dev\/vda mounted/, /pcc-guest: boot 1\r?\n/, /pcc-guest: config-drive \/dev\/sr0/,
        /pcc-guest: uuid c0ffee00-0000-4000-8000-000000000001/, /pcc-guest: name vm-one/, /pcc-guest: hostname vm-one.novalocal/,
        /pcc-guest: key mykey ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITest me@example/, /pcc-guest: meta role=web/,
        /pcc-guest: user-data: #!\/bin\/sh/, /pcc-guest: block vda 1073741824/, /pcc-guest: ready/, /pcc-guest: from user data 1/,
      ]) assert.match(first, line)
      assert.doesNotMatch(first, /s3cret/, 'the admin password never reaches the console')
      assert.match(first, /pcc-guest: admin-pass sha256:[0-9a-f]{16}/)

      const qmp = await guest.qmp()
      try {
        await qmp.execute('system_reset')
        await guest.waitFor(/pcc-guest: boot 2[\s\S]*pcc-guest: user-data exit 0/, BOOT_MS)
        assert.match(guest.console(), /pcc-guest: disk-file files\/note written-at-boot-1/, 'the file the first boot wrote is on the disk')
        const since = qmp.events.length
        await qmp.execute('system_powerdown')
        const shutdown = await qmp.waitEvent('SHUTDOWN', 30_000, { since })
        assert.equal(shutdown.data?.reason, 'guest-shutdown', 'the guest itself powered off')
        assert.match(guest.console(), /pcc-guest: power button: powering off/)
      } finally {
        qmp.close()
      }
    } finally {
      await guest?.stop()
    }
  })

  it('boots as a kernel/ramdisk image on its empty root file system', async () => {
    const root = join(work, 'root.qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', image.rootFs.path, root])
    let guest: BareGuest | undefined
    try {
      guest = bareGuest({ disk: root, diskFormat: 'qcow2', kernel: image.kernel.path, initrd: image.ramdisk.path, append: 'console=ttyS0 quiet' })
      await guest.waitFor(/pcc-guest: ready/, BOOT_MS)
      assert.match(guest.console(), /pcc-guest: disk \/dev\/vda mounted[\s\S]*pcc-guest: boot 1\r?\n[\s\S]*pcc-guest: config-drive none/)
    } finally {
      await guest?.stop()
    }
  })
})
