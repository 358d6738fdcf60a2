/**
 * The pcc guest image: a small bootable disk built on the machine itself, without internet, from Debian's cloud
 * kernel (`linux-image-cloud-amd64`), `busybox-static`, Dropbear (`dropbear-bin`: the SSH server) and the QEMU guest
 * agent (`qemu-guest-agent`), with the shared libraries they link. Its init (guest-image/rootfs/init) prints the
 * `pcc-guest:` lines that tests and the rest of the data plane read back from the console log (docs/qemu.md).
 *
 * What is built, into a cache directory keyed by every input (so a machine builds it once):
 * - `disk.qcow2`: a FAT file system labelled PCCROOT holding the kernel, the initramfs and syslinux, made bootable
 *   with syslinux (SeaBIOS boots the FAT's own boot sector: no partition table, no loop mount, no root needed).
 *   The guest mounts the same FAT read-write as its own disk (boot count, files user data writes).
 * - `kernel` and `ramdisk`: the same kernel and initramfs as files, for images with `kernel_id`/`ramdisk_id`.
 * - `root-fs.qcow2`: an empty PCCROOT FAT without a boot loader: the root disk of such a kernel/ramdisk image.
 *
 * Inputs come from a sysroot (default `/`): `boot/vmlinuz-<release>`, `lib/modules/<release>`, `bin/busybox`,
 * `usr/sbin/dropbear`, `usr/bin/dropbearkey` and `usr/sbin/qemu-ga` (their libraries are found with ldd and read from
 * the sysroot).
 * A machine without those packages installed can extract them there with `apt-get download` + `dpkg-deb -x`.
 * Tools: mtools (mformat, mcopy), syslinux, qemu-img.
 */
import { execFile, execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, writeSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { cpioArchive, type CpioEntry } from './cpio.js'

const run = promisify(execFile)

/** Raised when an input or tool is missing; the message names it and how to get it. */
export class GuestImageUnavailable extends Error {
  override name = 'GuestImageUnavailable'
}

/** Bump when the build itself changes in a way the inputs do not show. */
const BUILD_VERSION = 4

/**
 * Kernel modules the initramfs loads (with their dependencies), for the devices pcc gives a guest: virtio disks,
 * NICs and SCSI, IDE for the config drive's CD-ROM on `pc` machines, the file systems of the root disk (vfat) and
 * the config drive (iso9660), the ACPI power button and its input events (graceful stop), and pvpanic (a kernel
 * panic reaches QEMU as GUEST_PANICKED), virtio-rng (hw_rng_model=virtio feeds the guest's entropy) and virtio-console
 * (the guest agent's virtio-serial port, hw_qemu_guest_agent=yes). Modules the kernel builds in or lacks are skipped.
 */
const MODULES = ['virtio_pci', 'virtio_blk', 'virtio_net', 'virtio_scsi', 'sd_mod', 'sr_mod', 'ata_piix', 'isofs', 'vfat', 'nls_cp437', 'nls_ascii', 'button', 'evdev', 'pvpanic_mmio', 'virtio_rng', 'virtio_console']

/**
 * The kernel command line of the bootable disk; kernel/ramdisk images pass the same by default. no_timer_check, as
 * the QEMU driver adds under TCG for kernel images: a busy TCG host can make the IO-APIC timer check panic the boot.
 */
export const GUEST_KERNEL_CMDLINE = 'console=tty0 console=ttyS0 quiet no_timer_check'

const SYSLINUX_CFG = ['DEFAULT pcc', 'PROMPT 0', 'TIMEOUT 0', 'LABEL pcc', '  KERNEL vmlinuz', '  INITRD initrd.img', `  APPEND ${GUEST_KERNEL_CMDLINE}`, ''].join('\n')

/**
 * UEFI (hw_firmware_type=uefi): OVMF finds no EFI boot loader on the FAT and starts its shell, which runs
 * startup.nsh from the first file system: the kernel's EFI stub, given the initramfs and the same command line.
 */
const STARTUP_NSH = ['FS0:', `\\vmlinuz initrd=\\initrd.img ${GUEST_KERNEL_CMDLINE}`, ''].join('\r\n')

/** Size of the bootable FAT (holds a ~15 MB kernel, the initramfs and room for the guest's files). */
const DISK_MB = 64
const ROOT_FS_MB = 32

export interface GuestImageSources {
  kernel: string
  kernelRelease: string
  modulesDir: string
  busybox: string
  sysroot: string
  /** The SSH server and its host key generator, with the shared libraries they link (paths under the sysroot). */
  dropbear: string
  dropbearkey: string
  /** The QEMU guest agent (qemu-guest-agent). */
  qemuGa: string
  libraries: string[]
}

export interface GuestImageFile {
  path: string
  size: number
  md5: string
  sha512: string
}

export interface GuestImage {
  dir: string
  key: string
  kernelRelease: string
  modules: string[]
  disk: GuestImageFile
  kernel: GuestImageFile
  ramdisk: GuestImageFile
  rootFs: GuestImageFile
  /** Virtual sizes of the two disks in bytes. */
  diskVirtualSize: number
  rootFsVirtualSize: number
}

/** guest-image/rootfs in the source tree (dist/src/guest-image → three levels up is the package root). */
export function rootfsDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '../../../guest-image/rootfs')
}

/** Where built images are kept: PCC_GUEST_IMAGE_CACHE, else $XDG_CACHE_HOME/pcc/guest-image, else ~/.cache/pcc/guest-image. */
export function defaultCacheDir(): string {
  if (process.env.PCC_GUEST_IMAGE_CACHE) return process.env.PCC_GUEST_IMAGE_CACHE
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'pcc/guest-image')
}

function compareReleases(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true })
}

/** True when the ELF file has no program interpreter (statically linked). */
function isStaticElf(file: string): boolean {
  const b = readFileSync(file)
  if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2) return false
  const phoff = Number(b.readBigUInt64LE(0x20))
  const phentsize = b.readUInt16LE(0x36)
  const phnum = b.readUInt16LE(0x38)
  for (let i = 0; i < phnum; i++) if (b.readUInt32LE(phoff + i * phentsize) === 3) return false
  return true
}

/** The kernel, its modules, busybox and dropbear under `sysroot`; GuestImageUnavailable names what is missing. */
export function findSources(sysroot = '/'): GuestImageSources {
  const { kernel, kernelRelease, modulesDir } = findKernel(sysroot)
  const { dropbear, dropbearkey } = findDropbear(sysroot)
  const qemuGa = findGuestAgent(sysroot)
  return { sysroot, kernel, kernelRelease, modulesDir, busybox: findBusybox(sysroot), dropbear, dropbearkey, qemuGa, libraries: sharedLibraries(sysroot, [dropbear, dropbearkey, qemuGa]) }
}

/** The newest kernel under `sysroot` that has its modules (linux-image-cloud-amd64). */
export function findKernel(sysroot = '/'): { kernel: string; kernelRelease: string; modulesDir: string } {
  const boot = join(sysroot, 'boot')
  const releases = (existsSync(boot) ? readdirSync(boot) : [])
    .filter((f) => f.startsWith('vmlinuz-'))
    .map((f) => f.slice('vmlinuz-'.length))
    .filter((r) => existsSync(join(sysroot, 'lib/modules', r, 'modules.dep')))
    .sort(compareReleases)
  const kernelRelease = releases.at(-1)
  if (!kernelRelease) throw new GuestImageUnavailable(`no kernel with modules under ${sysroot} (boot/vmlinuz-<release> and lib/modules/<release>): install linux-image-cloud-amd64`)
  return { kernel: join(boot, `vmlinuz-${kernelRelease}`), kernelRelease, modulesDir: join(sysroot, 'lib/modules', kernelRelease) }
}

/** A statically linked busybox under `sysroot` (busybox-static): the guest's whole userland. */
export function findBusybox(sysroot = '/'): string {
  const busybox = join(sysroot, 'bin/busybox')
  if (!existsSync(busybox)) throw new GuestImageUnavailable(`${busybox} is missing: install busybox-static`)
  if (!isStaticElf(busybox)) throw new GuestImageUnavailable(`${busybox} is not statically linked: install busybox-static`)
  return busybox
}

/** The SSH server and its host key generator under `sysroot` (dropbear-bin), with the shared libraries they link. */
export function findDropbear(sysroot = '/'): { dropbear: string; dropbearkey: string; libraries: string[] } {
  const dropbear = join(sysroot, 'usr/sbin/dropbear')
  const dropbearkey = join(sysroot, 'usr/bin/dropbearkey')
  for (const f of [dropbear, dropbearkey]) if (!existsSync(f)) throw new GuestImageUnavailable(`${f} is missing: install dropbear-bin`)
  return { dropbear, dropbearkey, libraries: sharedLibraries(sysroot, [dropbear, dropbearkey]) }
}

/** The QEMU guest agent under `sysroot` (qemu-guest-agent); its libraries come with the others (findSources). */
export function findGuestAgent(sysroot = '/'): string {
  const qemuGa = join(sysroot, 'usr/sbin/qemu-ga')
  if (!existsSync(qemuGa)) throw new GuestImageUnavailable(`${qemuGa} is missing: install qemu-guest-agent`)
  return qemuGa
}

/**
 * The shared libraries (and the dynamic loader) the binaries link, as paths under the sysroot: ldd names them,
 * the sysroot provides them (a foreign sysroot needs the same library names as this machine's).
 */
function sharedLibraries(sysroot: string, binaries: string[]): string[] {
  const found = new Set<string>()
  for (const bin of binaries) {
    let out: string
    try {
      out = execFileSync('ldd', [bin], { encoding: 'utf8' })
    } catch (err) {
      throw new GuestImageUnavailable(`ldd ${bin} failed (${(err as Error).message.split('\n')[0]}): install libc-bin`)
    }
    for (const m of out.matchAll(/(?:=>\s*)?(\/\S+)\s+\(0x/g)) {
      const lib = join(sysroot, m[1])
      if (!existsSync(lib)) throw new GuestImageUnavailable(`${lib} (needed by ${bin}) is missing from the sysroot`)
      found.add(lib)
    }
  }
  return [...found].sort()
}

/** Module files (relative to the modules dir) for `wanted` and their dependencies, dependencies first. */
export function moduleClosure(modulesDir: string, wanted: string[]): string[] {
  const deps = new Map<string, string[]>()
  const byName = new Map<string, string>()
  for (const line of readFileSync(join(modulesDir, 'modules.dep'), 'utf8').split('\n')) {
    const [path, rest] = line.split(':')
    if (!path || rest === undefined) continue
    deps.set(path, rest.trim() ? rest.trim().split(/\s+/) : [])
    byName.set(basename(path).replace(/\.ko(\.\w+)?$/, '').replace(/-/g, '_'), path)
  }
  const order: string[] = []
  const visit = (path: string) => {
    if (order.includes(path)) return
    for (const d of deps.get(path) ?? []) visit(d)
    order.push(path)
  }
  for (const name of wanted) {
    const path = byName.get(name)
    if (path) visit(path)
  }
  const compressed = order.find((p) => !p.endsWith('.ko'))
  if (compressed) throw new GuestImageUnavailable(`kernel module ${compressed} is compressed; the guest image needs uncompressed modules (Debian 12's cloud kernel has them)`)
  return order
}

function listTree(dir: string): { rel: string; full: string; isDir: boolean }[] {
  const out: { rel: string; full: string; isDir: boolean }[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name)
      const isDir = statSync(full).isDirectory()
      out.push({ rel: relative(dir, full), full, isDir })
      if (isDir) walk(full)
    }
  }
  walk(dir)
  return out
}

/** The initramfs: busybox, the init and its helpers, the modules and their load order. */
export function buildInitramfs(sources: GuestImageSources, modules: string[], rootfs = rootfsDir()): Buffer {
  const entries: CpioEntry[] = []
  const dirs = new Set<string>()
  const dir = (path: string) => {
    const parts = path.split('/')
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/')
      if (!dirs.has(p)) {
        dirs.add(p)
        entries.push({ path: p, type: 'dir' })
      }
    }
  }
  dir('bin')
  dir('lib/modules')
  dir('etc')
  entries.push({ path: 'bin/busybox', type: 'file', data: readFileSync(sources.busybox), mode: 0o755 })
  entries.push({ path: 'bin/sh', type: 'symlink', target: 'busybox' })
  entries.push({ path: 'bin/dropbear', type: 'file', data: readFileSync(sources.dropbear), mode: 0o755 })
  entries.push({ path: 'bin/dropbearkey', type: 'file', data: readFileSync(sources.dropbearkey), mode: 0o755 })
  entries.push({ path: 'bin/qemu-ga', type: 'file', data: readFileSync(sources.qemuGa), mode: 0o755 })
  // Libraries at the paths the binaries' loader looks in (ldd's paths, e.g. /lib64/ld-linux-x86-64.so.2 and
  // /lib/x86_64-linux-gnu); a symlinked name gets the file's bytes (read through the link).
  for (const lib of sources.libraries) {
    const rel = relative(sources.sysroot, lib)
    dir(dirname(rel))
    entries.push({ path: rel, type: 'file', data: readFileSync(lib), mode: 0o755 })
  }
  for (const f of listTree(rootfs)) {
    if (f.isDir) dir(f.rel)
    else entries.push({ path: f.rel, type: 'file', data: readFileSync(f.full), mode: statSync(f.full).mode & 0o111 ? 0o755 : 0o644 })
  }
  for (const m of modules) entries.push({ path: `lib/modules/${basename(m)}`, type: 'file', data: readFileSync(join(sources.modulesDir, m)) })
  entries.push({ path: 'etc/modules', type: 'file', data: Buffer.from(modules.map((m) => basename(m)).join('\n') + '\n') })
  return gzipSync(cpioArchive(entries), { level: 9 })
}

async function tool(cmd: string, args: string[], missingHint: string): Promise<string> {
  try {
    return (await run(cmd, args, { maxBuffer: 16 * 1024 * 1024 })).stdout
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string }
    if (e.code === 'ENOENT') throw new GuestImageUnavailable(`${cmd} is not installed: ${missingHint}`)
    throw new Error(`${cmd} ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}`)
  }
}

const mtoolsHint = 'install mtools'

/** A FAT file system image of `mb` MiB labelled PCCROOT, with `files` copied in. */
async function fatImage(path: string, mb: number, files: string[]): Promise<void> {
  writeFileSync(path, Buffer.alloc(0))
  await tool('truncate', ['-s', `${mb}M`, path], 'install coreutils')
  // 64 heads × 32 sectors: a geometry SeaBIOS and syslinux agree on; tracks make up the size.
  await tool('mformat', ['-i', path, '-v', 'PCCROOT', '-h', '64', '-s', '32', '-t', String(mb), '::'], mtoolsHint)
  // mformat also writes a partition table whose one entry is the whole disk: the guest kernel would then show
  // the file system twice (vda and vda1). A plain FAT has none.
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(64), 0, 64, 0x1be)
  closeSync(fd)
  if (files.length) await tool('mcopy', ['-i', path, ...files, '::'], mtoolsHint)
}

function describe(path: string): GuestImageFile {
  const data = readFileSync(path)
  return { path, size: data.length, md5: createHash('md5').update(data).digest('hex'), sha512: createHash('sha512').update(data).digest('hex') }
}

async function virtualSize(path: string): Promise<number> {
  const info = JSON.parse(await tool('qemu-img', ['info', '-f', 'qcow2', '--output=json', path], 'install qemu-utils')) as { 'virtual-size': number }
  return info['virtual-size']
}

/** Everything the output depends on, hashed: the cache key. */
function cacheKey(sources: GuestImageSources, modules: string[], rootfs: string, syslinuxVersion: string): string {
  const h = createHash('sha256')
  h.update(`pcc-guest-image ${BUILD_VERSION}\n${SYSLINUX_CFG}\n${STARTUP_NSH}\n${syslinuxVersion}\n${DISK_MB} ${ROOT_FS_MB}\n`)
  h.update(readFileSync(sources.kernel))
  h.update(readFileSync(sources.busybox))
  for (const f of [sources.dropbear, sources.dropbearkey, sources.qemuGa, ...sources.libraries]) h.update(`${f}\n`).update(readFileSync(f))
  for (const m of modules) h.update(`${m}\n`).update(readFileSync(join(sources.modulesDir, m)))
  for (const f of listTree(rootfs)) h.update(`${f.rel}\n`).update(f.isDir ? '' : readFileSync(f.full))
  return h.digest('hex').slice(0, 24)
}

export interface BuildOptions {
  /** Where the kernel, modules and busybox are looked for (default `/`). */
  sysroot?: string
  cacheDir?: string
  rootfs?: string
}

/**
 * The guest image for these inputs, built once and then read from the cache. Safe to call from several processes
 * at once: each builds in a private directory and the first rename wins.
 */
export async function buildGuestImage(options: BuildOptions = {}): Promise<GuestImage> {
  const sources = findSources(options.sysroot)
  const rootfs = options.rootfs ?? rootfsDir()
  const modules = moduleClosure(sources.modulesDir, MODULES)
  const syslinuxVersion = (await tool('syslinux', ['--version'], 'install syslinux').catch((err: unknown) => {
    // syslinux --version prints to stderr and exits 1 on some builds; only a missing binary is fatal.
    if (err instanceof GuestImageUnavailable) throw err
    return (err as Error).message
  })).trim()
  const cache = options.cacheDir ?? defaultCacheDir()
  const key = cacheKey(sources, modules, rootfs, syslinuxVersion)
  const dir = join(cache, key)
  const manifest = join(dir, 'manifest.json')
  if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')) as GuestImage

  mkdirSync(cache, { recursive: true })
  const work = join(cache, `.build-${randomBytes(6).toString('hex')}`)
  mkdirSync(work)
  try {
    const kernel = join(work, 'kernel')
    const ramdisk = join(work, 'ramdisk')
    writeFileSync(kernel, readFileSync(sources.kernel))
    writeFileSync(ramdisk, buildInitramfs(sources, modules, rootfs))
    // mcopy names files after their source: stage them under the names syslinux.cfg uses.
    const stage = join(work, 'stage')
    mkdirSync(stage)
    writeFileSync(join(stage, 'vmlinuz'), readFileSync(kernel))
    writeFileSync(join(stage, 'initrd.img'), readFileSync(ramdisk))
    writeFileSync(join(stage, 'syslinux.cfg'), SYSLINUX_CFG)
    writeFileSync(join(stage, 'startup.nsh'), STARTUP_NSH)
    const raw = join(work, 'disk.raw')
    await fatImage(raw, DISK_MB, ['vmlinuz', 'initrd.img', 'syslinux.cfg', 'startup.nsh'].map((f) => join(stage, f)))
    await tool('syslinux', ['--install', raw], 'install syslinux')
    const rootRaw = join(work, 'root-fs.raw')
    await fatImage(rootRaw, ROOT_FS_MB, [])
    const disk = join(work, 'disk.qcow2')
    const rootFs = join(work, 'root-fs.qcow2')
    await tool('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', '-c', raw, disk], 'install qemu-utils')
    await tool('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', '-c', rootRaw, rootFs], 'install qemu-utils')
    rmSync(stage, { recursive: true })
    rmSync(raw)
    rmSync(rootRaw)
    const at = (f: GuestImageFile): GuestImageFile => ({ ...f, path: join(dir, basename(f.path)) })
    const image: GuestImage = {
      dir,
      key,
      kernelRelease: sources.kernelRelease,
      modules: modules.map((m) => basename(m)),
      disk: at(describe(disk)),
      kernel: at(describe(kernel)),
      ramdisk: at(describe(ramdisk)),
      rootFs: at(describe(rootFs)),
      diskVirtualSize: await virtualSize(disk),
      rootFsVirtualSize: await virtualSize(rootFs),
    }
    writeFileSync(join(work, 'manifest.json'), JSON.stringify(image, null, 2) + '\n')
    try {
      renameSync(work, dir)
    } catch (err) {
      // Another process finished the same build first: use its result.
      if (!existsSync(manifest)) throw err
    }
    return JSON.parse(readFileSync(manifest, 'utf8')) as GuestImage
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Why the guest image cannot be built here, or undefined when it can (inputs and tools present). */
export function guestImageUnavailable(sysroot = '/'): string | undefined {
  try {
    findSources(sysroot)
  } catch (err) {
    return (err as Error).message
  }
  const path = (process.env.PATH ?? '').split(':')
  for (const [cmd, pkg] of [['mformat', 'mtools'], ['mcopy', 'mtools'], ['syslinux', 'syslinux'], ['qemu-img', 'qemu-utils']]) {
    if (!path.some((p) => existsSync(join(p, cmd)))) return `${cmd} is not installed: install ${pkg}`
  }
  return undefined
}
