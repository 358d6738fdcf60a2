/**
 * The pcc guest image, booted under QEMU directly: what its init prints is the contract the driver's tests and the
 * other data-plane parts rely on (docs/qemu.md, "The guest image").
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { freePort } from '../../src/testkit/harness.js'
import { promisify } from 'node:util'
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

/** ssh and ssh-keygen (Debian's openssh-client) have no --version: spawning is the test. */
function sshMissing(): string | false {
  for (const cmd of ['ssh', 'ssh-keygen']) if (spawnSync(cmd, ['-V']).error) return `${cmd} is not installed (openssh-client)`
  return false
}

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
    // Hashing the inputs (kernel, modules, binaries and libraries: ~25 MB) takes seconds on a loaded machine; a
    // build takes far longer (10 s idle, a minute loaded).
    assert.ok(Date.now() - started < 15_000, `no rebuild (${Date.now() - started} ms)`)
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
      // /mnt is on the guest's disk (as a cloud image's root file system holds it): a file written there at the first
      // boot is still there at the second.
      'openstack/latest/user_data': '#!/bin/sh\necho "pcc-guest: from user data $(cat /mnt/disk/pcc/boot-count)"\necho written-at-boot-$(cat /mnt/disk/pcc/boot-count) > /mnt/disk/files/note\n[ -f /mnt/kept ] || echo mnt-written-at-boot-$(cat /mnt/disk/pcc/boot-count) > /mnt/kept\necho "pcc-guest: mnt $(cat /mnt/kept)"\nsync\n',
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
        assert.match(guest.console(), /pcc-guest: boot 2[\s\S]*pcc-guest: mnt mnt-written-at-boot-1/, 'what the first boot wrote in /mnt is there')
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

  it('answers SSH with the config drive\'s key as pcc and root (no password), with the tools Tempest runs in a guest', { skip: sshMissing() }, async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'tester', '-f', join(work, 'id')])
    const publicKey = readFileSync(join(work, 'id.pub'), 'utf8').trim()
    const overlay = join(work, 'ssh-overlay.qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', image.disk.path, overlay])
    const volume = join(work, 'volume.raw')
    execFileSync('truncate', ['-s', '16M', volume])
    const drive = join(work, 'ssh-config.iso')
    await writeConfigDrive(drive, {
      'openstack/latest/meta_data.json': JSON.stringify({ uuid: 'c0ffee00-0000-4000-8000-000000000002', name: 'ssh-one', hostname: 'ssh-one.novalocal', public_keys: { tester: publicKey } }),
    })
    const port = await freePort()
    let guest: BareGuest | undefined
    try {
      // QEMU's user-mode network: DHCP inside, the guest's port 22 forwarded to the test's port on 127.0.0.1.
      guest = bareGuest({
        disk: overlay, diskFormat: 'qcow2', configDrive: drive,
        extraArgs: ['-drive', `file=${volume},format=raw,if=virtio`, '-netdev', `user,id=n0,hostfwd=tcp:127.0.0.1:${port}-:22`, '-device', 'virtio-net-pci,netdev=n0'],
      })
      const started = Date.now()
      await guest.waitFor(/pcc-guest: ready/, BOOT_MS)
      const log = guest.console()
      assert.match(log, /pcc-guest: address eth0 10\.0\.2\.15\/24/, 'DHCP on the NIC')
      assert.match(log, /pcc-guest: ssh-host-key ed25519 SHA256:\S+/)
      assert.match(log, /pcc-guest: ssh dropbear port 22/)
      const ssh = (user: string, command: string, key = join(work, 'id')) =>
        promisify(execFile)('ssh', ['-i', key, '-p', String(port), '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=10', `${user}@127.0.0.1`, command], { timeout: 60_000 })
      const who = await ssh('pcc', 'id -u; hostname; sudo id -u')
      assert.equal(who.stdout, '0\nssh-one\n0\n')
      assert.ok(Date.now() - started < BOOT_MS, 'SSH within the boot bound')
      assert.equal((await ssh('root', 'echo root-too')).stdout, 'root-too\n')
      // A file system on the second disk, written, unmounted, mounted again and read back; dd and ping are there.
      const volumeWork = await ssh('pcc', [
        'sudo mke2fs -t ext4 /dev/vdb >/dev/null', 'sudo mkfs -t ext4 /dev/vdb >/dev/null', 'sudo mount -t ext4 /dev/vdb /mnt', 'echo kept-on-volume | sudo tee /mnt/file >/dev/null', 'sync', 'sudo umount /mnt',
        'sudo mount /dev/vdb /mnt', 'cat /mnt/file', 'sudo umount /mnt', 'dd if=/dev/vdb bs=512 count=2 2>/dev/null | wc -c', 'ping -c 1 -W 5 127.0.0.1 >/dev/null && echo ping-ok',
        'which ip wget curl mount dd >/dev/null && echo tools-ok',
        // As Tempest renews a lease (test_subnet_details): SIGUSR1 to the pid udhcpc keeps where CirrOS's does.
        'sudo /bin/kill -USR1 "$(cat /var/run/udhcpc.eth0.pid)" && echo renew-ok',
        // As Tempest's remote client finds the config drive and lists the disks (TYPE column), and checks for curl.
        'blkid -L config-2 -o device', "lsblk -lb --nodeps | awk 'NR > 1 { print $1, $6 }'", 'curl -V >/dev/null && echo curl-ok',
      ].join(' && '))
      assert.equal(volumeWork.stdout, 'kept-on-volume\n1024\nping-ok\ntools-ok\nrenew-ok\n/dev/sr0\nsr0 rom\nvda disk\nvdb disk\ncurl-ok\n')
      // Only the key pair's key opens it: another key is refused (and no password is asked for: BatchMode).
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(work, 'other')])
      await assert.rejects(ssh('pcc', 'true', join(work, 'other')), /Permission denied/)
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
