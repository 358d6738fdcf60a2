/**
 * Real distribution images for clouds without internet access: a Debian 12 cloud image built from the machine's
 * own apt mirror, as Debian's "genericcloud" image is made of (cloud kernel, cloud-init reading the config drive
 * or the metadata service, OpenSSH, growpart, sudo, netplan driving systemd-networkd), in the shape the pcc guest
 * image already proves SeaBIOS boots (docs/qemu.md, "Debian images"):
 *
 * - `mmdebstrap --mode=root` into a directory, run inside a private mount namespace (`unshare --mount`): the
 *   /proc, /sys and /dev mounts mmdebstrap makes in its chroot vanish with that namespace even if the build is
 *   killed, so removing the work directory can never reach the host's /dev;
 * - a raw disk with an MBR (syslinux's mbr.bin, written by mbr.ts): partition 1 a FAT32 boot partition made by
 *   mtools at its offset, holding the kernel, the initramfs and syslinux.cfg, made bootable by `syslinux --install
 *   --offset`; partition 2 an ext4 root made by `mke2fs -d` at its offset from the directory. No loop device, no
 *   mount: only files;
 * - converted to a compressed qcow2.
 *
 * The guest mounts the boot partition at /boot/firmware; an initramfs hook copies each new kernel and initramfs
 * there, so a kernel upgraded inside the guest is the one it boots next.
 */
import { spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { mbrSector, SECTOR, writeMbr } from './mbr.js'

/** Raised when the build cannot start here; the message says what to do. */
export class DistroImageUnavailable extends Error {
  override name = 'DistroImageUnavailable'
}

export interface DistroImageRecipe {
  /** The name operators type (`pcctl image build debian-12`). */
  name: string
  suite: string
  /** What mmdebstrap installs on top of its `minbase` variant (with their dependencies). */
  packages: string[]
  /** The user cloud-init makes and gives the key pair (Debian's cloud-init default user). */
  adminUser: string
  /** Virtual size of the disk (GiB): what a flavor's root disk must at least have; cloud-init grows it to the flavor's. */
  diskGiB: number
  /** Glance properties the uploaded image carries, so pcc and clients know how to boot and log in. */
  properties: Record<string, string>
  minRamMb: number
}

export const DEBIAN_12: DistroImageRecipe = {
  name: 'debian-12',
  suite: 'bookworm',
  packages: [
    'systemd-sysv', 'udev', 'dbus', 'linux-image-cloud-amd64', 'initramfs-tools',
    'cloud-init', 'cloud-guest-utils', 'fdisk', 'e2fsprogs', 'openssh-server', 'sudo',
    'netplan.io', 'systemd-resolved', 'iproute2', 'iputils-ping', 'curl', 'ca-certificates', 'less', 'procps',
  ],
  adminUser: 'debian',
  diskGiB: 2,
  properties: { os_distro: 'debian', os_version: '12', os_type: 'linux', os_admin_user: 'debian', hw_disk_bus: 'virtio', hw_vif_model: 'virtio', hw_firmware_type: 'bios' },
  minRamMb: 512,
}

export const DISTRO_IMAGES: Record<string, DistroImageRecipe> = { [DEBIAN_12.name]: DEBIAN_12 }

/**
 * The Glance create request for an image of the recipe: its sizes and properties, so that pcc boots it as the
 * recipe expects and clients know whom to log in as (pcctl's upload and the conformance runner's).
 */
export function glanceImageRequest(recipe: DistroImageRecipe, name: string, visibility: 'public' | 'private'): Record<string, string | number> {
  return { name, container_format: 'bare', disk_format: 'qcow2', min_disk: recipe.diskGiB, min_ram: recipe.minRamMb, visibility, ...recipe.properties }
}

/** The boot partition: 1 MiB in (the usual alignment), 128 MiB (a kernel and initramfs, and room for the next). */
const BOOT_START = 2048
const BOOT_SECTORS = (128 * 1024 * 1024) / SECTOR
const ROOT_START = BOOT_START + BOOT_SECTORS
const MBR_BOOT_CODE = '/usr/lib/SYSLINUX/mbr.bin'

// no_timer_check: under TCG on a busy host the kernel's check of the IO-APIC timer can miss its ticks and panic
// ("IO-APIC + timer doesn't work!"); skipping the check costs nothing under KVM (Fedora's cloud images set it too).
const KERNEL_CMDLINE = 'ro console=tty0 console=ttyS0,115200 consoleblank=0 no_timer_check'

/** Tools the build runs, and the Debian package that brings each. */
const TOOLS: [string, string][] = [
  ['mmdebstrap', 'mmdebstrap'], ['unshare', 'util-linux'], ['mformat', 'mtools'], ['mcopy', 'mtools'], ['syslinux', 'syslinux'],
  ['mke2fs', 'e2fsprogs'], ['qemu-img', 'qemu-utils'],
]

function onPath(cmd: string, path: string): boolean {
  return path.split(':').some((p) => p && existsSync(join(p, cmd)))
}

/**
 * Why the build cannot run here (not root, tools missing: with the apt-get command that fixes it), or undefined.
 * `path` and `uid` are the caller's (pcctl passes its environment's PATH).
 */
export function distroImageUnavailable(path = process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', uid = process.getuid?.()): string | undefined {
  if (uid !== 0) return 'building a Debian image needs root (mmdebstrap installs packages into a chroot, and the root file system must keep their owners): run it again with sudo'
  const missing = new Set(TOOLS.filter(([cmd]) => !onPath(cmd, path)).map(([, pkg]) => pkg))
  if (!existsSync(MBR_BOOT_CODE)) missing.add('syslinux')
  if (missing.size) return `missing tools: install them with  apt-get install -y ${[...missing].join(' ')}`
  return undefined
}

/** The machine's own apt sources when they are Debian's and name the recipe's suite, else Debian's mirror. */
export function defaultMirror(recipe: DistroImageRecipe): string {
  const deb822 = '/etc/apt/sources.list.d/debian.sources'
  if (existsSync(deb822) && new RegExp(`^Suites:.*\\b${recipe.suite}\\b`, 'm').test(readFileSync(deb822, 'utf8'))) return deb822
  return 'http://deb.debian.org/debian'
}

export interface BuildStage {
  stage: 'bootstrap' | 'configure' | 'boot partition' | 'root file system' | 'partition table' | 'qcow2' | 'done'
  message: string
  elapsedMs: number
}

export interface DistroDisk {
  /** Bytes of the qcow2 file. */
  size: number
  virtualSize: number
  rootUuid: string
  bootUuid: string
  /** Bytes of files in the root file system. */
  rootBytes: number
}

export interface DistroImageBuild extends DistroDisk {
  path: string
  kernelRelease: string
  elapsedMs: number
}

export interface DistroBuildOptions {
  recipe?: DistroImageRecipe
  /** The qcow2 file to write (replaced only once the whole build succeeded). */
  output: string
  /** A mirror URL or an apt sources file (mmdebstrap's MIRROR); default defaultMirror(). */
  mirror?: string
  progress?: (stage: BuildStage) => void
  /** mmdebstrap's own lines (`I: installing remaining packages…`), for a verbose view. */
  detail?: (line: string) => void
}

/** Runs a command; rejects with its last lines of output when it fails, or naming the package when it is missing. */
function runTool(cmd: string, args: string[], onLine?: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const tail: string[] = []
    const take = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line.trim()) continue
        tail.push(line)
        if (tail.length > 30) tail.shift()
        onLine?.(line)
      }
    }
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      take(c)
    })
    child.stderr.on('data', take)
    child.on('error', (err: NodeJS.ErrnoException) => {
      const pkg = TOOLS.find(([c]) => c === cmd)?.[1]
      reject(err.code === 'ENOENT' ? new DistroImageUnavailable(`${cmd} is not installed: apt-get install -y ${pkg ?? cmd}`) : err)
    })
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.slice(0, 6).join(' ')}… exited ${code}:\n${tail.join('\n')}`))))
  })
}

/** Bytes of regular files and symlinks under `dir` (hard links once), without following links. */
function treeBytes(dir: string): number {
  let total = 0
  const seen = new Set<string>()
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name)
      const st = lstatSync(full)
      if (st.isDirectory()) walk(full)
      else if (st.nlink > 1 && seen.has(`${st.dev}:${st.ino}`)) continue
      else {
        if (st.nlink > 1) seen.add(`${st.dev}:${st.ino}`)
        total += st.size
      }
    }
  }
  walk(dir)
  return total
}

export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MiB`
}

/** One sector of a file. */
function readSector(file: string, lba: number): Buffer {
  const sector = Buffer.alloc(SECTOR)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, sector, 0, SECTOR, lba * SECTOR)
  } finally {
    closeSync(fd)
  }
  return sector
}

/** The newest kernel release under the root's /boot that has an initramfs. */
function kernelRelease(root: string): string {
  const releases = readdirSync(join(root, 'boot'))
    .filter((f) => f.startsWith('vmlinuz-'))
    .map((f) => f.slice('vmlinuz-'.length))
    .filter((r) => existsSync(join(root, 'boot', `initrd.img-${r}`)))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
  const release = releases.at(-1)
  if (!release) throw new Error('mmdebstrap left no kernel with an initramfs in /boot (is linux-image-cloud-amd64 in the recipe?)')
  return release
}

/** syslinux.cfg on the boot partition: the kernel and initramfs under fixed names, the root by its UUID. */
export function syslinuxConfig(rootUuid: string): string {
  return ['DEFAULT debian', 'PROMPT 0', 'TIMEOUT 0', 'LABEL debian', '  KERNEL vmlinuz', '  INITRD initrd.img', `  APPEND root=UUID=${rootUuid} ${KERNEL_CMDLINE}`, ''].join('\n')
}

/**
 * The initramfs hook that keeps the boot partition current: initramfs-tools runs it after each new initramfs
 * (a kernel installed or upgraded, `update-initramfs -u`); it copies the newest kernel's files under the names
 * syslinux.cfg boots, through a temporary name so a full partition never leaves half a kernel.
 */
export const BOOT_PARTITION_HOOK = `#!/bin/sh
# pcc: this image boots with syslinux from its FAT boot partition, mounted at /boot/firmware. Copy the kernel and
# initramfs just made there when they are the newest kernel's (update-initramfs -k all runs this once per kernel).
set -e
version="$1"
initrd="\${2:-/boot/initrd.img-$1}"
mountpoint -q /boot/firmware || { echo "pcc-boot-partition: /boot/firmware is not mounted; the next boot keeps its old kernel" >&2; exit 0; }
newest=$(linux-version list | linux-version sort | tail -n 1)
[ "$version" = "$newest" ] || exit 0
cp "/boot/vmlinuz-$version" /boot/firmware/vmlinuz.new
mv /boot/firmware/vmlinuz.new /boot/firmware/vmlinuz
cp "$initrd" /boot/firmware/initrd.img.new
mv /boot/firmware/initrd.img.new /boot/firmware/initrd.img
sync
`

/** cloud-init's configuration, as Debian's genericcloud image sets it for OpenStack. */
const CLOUD_CFG = `# pcc: OpenStack's two datasources: the config drive first (no network needed), then the metadata service.
datasource_list: [ ConfigDrive, OpenStack, None ]
datasource:
  OpenStack:
    max_wait: 60
    timeout: 10
# C.UTF-8 is built into libc: cloud-init's default (en_US.UTF-8) would run locale-gen at every first boot, and
# fail, as Debian's locale-gen makes only what /etc/locale.gen lists.
locale: C.UTF-8
# netplan renders the network configuration for systemd-networkd, as in Debian 12's cloud images.
system_info:
  network:
    renderers: [ netplan ]
`

/** Files the image gets on top of what the packages install, given the two file systems' identities. */
function configureRoot(root: string, rootUuid: string, bootSerial: string): void {
  const write = (path: string, text: string, mode = 0o644) => {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
    chmodSync(join(root, path), mode)
  }
  write('etc/fstab', [
    '# pcc: the root by UUID (mke2fs -U), the FAT boot partition syslinux starts from (kept current by an initramfs hook).',
    `UUID=${rootUuid} / ext4 rw,discard,errors=remount-ro 0 1`,
    `UUID=${bootSerial} /boot/firmware vfat defaults,umask=0077,nofail 0 0`,
    '',
  ].join('\n'))
  mkdirSync(join(root, 'boot/firmware'), { recursive: true })
  write('etc/initramfs/post-update.d/pcc-boot-partition', BOOT_PARTITION_HOOK, 0o755)
  write('etc/cloud/cloud.cfg.d/01_pcc.cfg', CLOUD_CFG)
  write('etc/hostname', 'localhost\n')
  write('etc/hosts', '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n')
  // Each server makes its own identity at first boot: no machine id, no SSH host keys shared by every guest.
  write('etc/machine-id', '')
  rmSync(join(root, 'var/lib/dbus/machine-id'), { force: true })
  for (const f of readdirSync(join(root, 'etc/ssh'))) if (f.startsWith('ssh_host_')) rmSync(join(root, 'etc/ssh', f))
}

/**
 * The disk from a bootstrapped root directory: configured for the cloud, a FAT boot partition with syslinux, the
 * ext4 root from the directory, the MBR, converted to a compressed qcow2 at `output`. `work` holds the raw disk.
 */
export async function diskFromRoot(root: string, work: string, output: string, recipe: DistroImageRecipe, report: (stage: BuildStage['stage'], message: string) => void): Promise<DistroDisk> {
  const rootUuid = randomUUID()
  const bootSerial = randomBytes(4).toString('hex').toUpperCase()
  const bootUuid = `${bootSerial.slice(0, 4)}-${bootSerial.slice(4)}`
  const release = kernelRelease(root)
  configureRoot(root, rootUuid, bootUuid)
  report('configure', `cloud-init (ConfigDrive, OpenStack; user ${recipe.adminUser}), fstab (root UUID ${rootUuid}, boot ${bootUuid}), no SSH host keys or machine id`)

  const raw = join(work, 'disk.raw')
  const diskBytes = recipe.diskGiB * 1024 * 1024 * 1024
  writeFileSync(raw, Buffer.alloc(0))
  await runTool('truncate', ['-s', String(diskBytes), raw])
  const bootOffset = BOOT_START * SECTOR
  const fat = `${raw}@@${bootOffset}`
  // The partition's size in sectors (-T: with an offset, mformat otherwise sizes the FAT to the end of the file,
  // over the root partition), 64 heads × 32 sectors, hidden sectors = the partition's start, which the FAT's boot
  // sector (syslinux) adds to find its files on the disk.
  await runTool('mformat', ['-i', fat, '-F', '-v', 'BOOT', '-N', bootSerial, '-T', String(BOOT_SECTORS), '-h', '64', '-s', '32', '-H', String(BOOT_START), '::'])
  const fatSectors = readSector(raw, BOOT_START).readUInt32LE(32)
  if (fatSectors !== BOOT_SECTORS) throw new Error(`mformat made a FAT of ${fatSectors} sectors, not the partition's ${BOOT_SECTORS}`)
  const stage = join(work, 'stage')
  mkdirSync(stage)
  writeFileSync(join(stage, 'vmlinuz'), readFileSync(join(root, 'boot', `vmlinuz-${release}`)))
  writeFileSync(join(stage, 'initrd.img'), readFileSync(join(root, 'boot', `initrd.img-${release}`)))
  writeFileSync(join(stage, 'syslinux.cfg'), syslinuxConfig(rootUuid))
  await runTool('mcopy', ['-i', fat, ...['vmlinuz', 'initrd.img', 'syslinux.cfg'].map((f) => join(stage, f)), '::'])
  await runTool('syslinux', ['--install', '--offset', String(bootOffset), raw])
  report('boot partition', `FAT32 ${mib(BOOT_SECTORS * SECTOR)}: vmlinuz ${mib(statSync(join(stage, 'vmlinuz')).size)}, initrd.img ${mib(statSync(join(stage, 'initrd.img')).size)}, syslinux`)
  rmSync(stage, { recursive: true })

  const rootBytes = treeBytes(root)
  const rootSectors = diskBytes / SECTOR - ROOT_START
  if (rootBytes > rootSectors * SECTOR * 0.9) throw new Error(`the root file system holds ${mib(rootBytes)}, too much for a ${recipe.diskGiB} GiB disk`)
  await runTool('mke2fs', ['-q', '-F', '-t', 'ext4', '-L', 'root', '-U', rootUuid, '-E', `offset=${ROOT_START * SECTOR},root_owner=0:0`, '-d', root, raw, `${(rootSectors * SECTOR) / 1024}k`])
  report('root file system', `ext4 ${mib(rootSectors * SECTOR)} with ${mib(rootBytes)} of files (mke2fs -d)`)

  writeMbr(raw, mbrSector(readFileSync(MBR_BOOT_CODE), randomBytes(4).readUInt32LE(0), [
    { start: BOOT_START, sectors: BOOT_SECTORS, type: 0x0c, bootable: true },
    { start: ROOT_START, sectors: rootSectors, type: 0x83 },
  ]))
  report('partition table', 'MBR: 1 FAT32 (active, syslinux), 2 Linux (the root; cloud-init grows it to the flavor\'s disk)')

  const qcow2 = join(work, 'disk.qcow2')
  await runTool('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', '-c', raw, qcow2])
  rmSync(raw)
  renameSync(qcow2, output)
  const size = statSync(output).size
  report('qcow2', `${output}: ${mib(size)} (virtual ${recipe.diskGiB} GiB, compressed)`)
  return { size, virtualSize: diskBytes, rootUuid, bootUuid, rootBytes }
}

/** Builds the image into `output`; stages are reported as they finish. */
export async function buildDistroImage(options: DistroBuildOptions): Promise<DistroImageBuild> {
  const recipe = options.recipe ?? DEBIAN_12
  const why = distroImageUnavailable()
  if (why) throw new DistroImageUnavailable(why)
  const started = performance.now()
  const report = (stage: BuildStage['stage'], message: string) => options.progress?.({ stage, message, elapsedMs: performance.now() - started })
  const mirror = options.mirror ?? defaultMirror(recipe)
  mkdirSync(dirname(options.output), { recursive: true })
  // Next to the output: the same file system, so the finished image is renamed into place.
  const work = mkdtempSync(join(dirname(options.output), `.${basename(options.output)}.build-`))
  try {
    const root = join(work, 'root')
    report('bootstrap', `mmdebstrap ${recipe.suite} (${recipe.packages.length} packages and their dependencies) from ${mirror}`)
    await runTool('unshare', [
      '--mount', '--propagation', 'private', '--', 'mmdebstrap', '--mode=root', '--variant=minbase', `--include=${recipe.packages.join(',')}`,
      '--aptopt=Acquire::Retries "3"', '--dpkgopt=path-exclude=/usr/share/doc/*', '--dpkgopt=path-include=/usr/share/doc/*/copyright', '--dpkgopt=path-exclude=/usr/share/man/*',
      recipe.suite, root, mirror,
    ], options.detail)
    const release = kernelRelease(root)
    report('bootstrap', `done: kernel ${release}, ${mib(treeBytes(root))} installed`)

    const disk = await diskFromRoot(root, work, options.output, recipe, report)
    const elapsedMs = performance.now() - started
    report('done', `built in ${(elapsedMs / 1000).toFixed(0)} s`)
    return { path: options.output, kernelRelease: release, ...disk, elapsedMs }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
