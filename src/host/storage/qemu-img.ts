/**
 * The programs the volume backends run (qemu-img, cp, LVM's tools), each with a bounded run time and its
 * standard error in the failure's message. Formats are always named: qemu-img never probes a user's image (a
 * probed qcow2 could name a backing file anywhere on the host).
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { VolumeBackendError, type BlockdevSpec, type NbdSource } from '../../contracts/host/volume.js'

/** Copies of volumes can be large: an hour before a copy is given up. */
const COPY_TIMEOUT_MS = 3_600_000

/** Runs a program; resolves with its standard output, rejects with a VolumeBackendError carrying its stderr. */
export function run(program: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    // LVM's tools warn on every descriptor they inherit; Node's own are not leaks worth a line in an error.
    const env = { ...process.env, LVM_SUPPRESS_FD_WARNINGS: '1' }
    execFile(program, args, { timeout: timeoutMs, maxBuffer: 16 << 20, killSignal: 'SIGKILL', env }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout)
      const code = (err as NodeJS.ErrnoException).code
      const why = code === 'ENOENT' ? `${program} is not installed` : stderr.trim() || err.message
      reject(new VolumeBackendError(`${program} ${args[0] ?? ''} failed: ${why}`))
    })
  })
}

/** The `json:` filename QEMU's tools accept for a block node definition. */
export function jsonFilename(spec: BlockdevSpec): string {
  return `json:${JSON.stringify(spec)}`
}

export interface ImageInfo {
  virtualSize: number
  format: string
  backingFile?: string
  dataFile?: string
}

/** `qemu-img info` of a file in the given format. */
export async function imageInfo(path: string, format: string): Promise<ImageInfo> {
  const info = JSON.parse(await run('qemu-img', ['info', '--output=json', '-f', format, path])) as {
    'virtual-size': number
    format: string
    'backing-filename'?: string
    'format-specific'?: { data?: { 'data-file'?: string } }
  }
  return { virtualSize: info['virtual-size'], format: info.format, backingFile: info['backing-filename'], dataFile: info['format-specific']?.data?.['data-file'] }
}

/** The NBD client node of an export, with the TLS object it needs (id `tls0`). */
export function nbdBlockdev(source: NbdSource): BlockdevSpec {
  return { driver: 'raw', file: { driver: 'nbd', server: { type: 'inet', host: source.host, port: String(source.port) }, export: source.export, 'tls-creds': 'tls0' } }
}

/**
 * Runs `use` with a private directory holding the PSK key file of `source` (GnuTLS's `identity:hexkey` line),
 * removed afterwards: QEMU's TLS client reads its key from a file, never from the command line.
 */
export async function withPskDir<T>(source: NbdSource, use: (tlsObject: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'pcc-psk-'))
  try {
    await writeFile(join(dir, 'keys.psk'), `${source.pskIdentity}:${source.pskKey}\n`, { mode: 0o600 })
    return await use(`tls-creds-psk,id=tls0,dir=${dir},endpoint=client,username=${source.pskIdentity}`)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Copies every byte of `source` (a file in a named format, or a block node) onto the existing node `target`,
 * which must be at least as large. Zero ranges are written as holes or discards, so sparse stays sparse.
 */
export async function convertInto(source: { path: string; format: string } | { blockdev: BlockdevSpec; object?: string }, target: BlockdevSpec, targetObject?: string): Promise<void> {
  // A volume read while attached is exported (its daemon holds the write lock): read it sharing writes (-U), as
  // Cinder copies an in-use volume — consistent as of no moment in particular unless the guest is idle.
  const from = 'path' in source ? ['-f', source.format, source.path] : ['-U', ...(source.object ? ['--object', source.object] : []), jsonFilename(source.blockdev)]
  // A target reached over NBD (a restore onto a storage host) needs its TLS object too.
  const to = [...(targetObject ? ['--object', targetObject] : []), jsonFilename(target)]
  await run('qemu-img', ['convert', '-n', ...from, ...to], COPY_TIMEOUT_MS)
}

/**
 * Copies a node's bytes into a new image file at `path` (upload to image, a backup's raw copy): raw as they are,
 * or qcow2. `object` is the TLS object of a node read over NBD.
 */
export async function convertToFile(source: BlockdevSpec, path: string, format: 'raw' | 'qcow2' = 'raw', object?: string): Promise<void> {
  await run('qemu-img', ['convert', '-U', ...(object ? ['--object', object] : []), '-O', format, jsonFilename(source), path], COPY_TIMEOUT_MS)
}

/** The size in bytes of what a node opens. */
export async function nodeSize(spec: BlockdevSpec, object?: string): Promise<number> {
  const out = await run('qemu-img', ['info', '--output=json', ...(object ? ['--object', object] : []), jsonFilename(spec)])
  return (JSON.parse(out) as { 'virtual-size': number })['virtual-size']
}

/** Refuses an image whose bytes are not self-contained (a backing file or data file could read any host file). */
export async function checkImage(path: string, format: 'raw' | 'qcow2', maxBytes: number): Promise<ImageInfo> {
  const info = await imageInfo(path, format)
  if (info.backingFile || info.dataFile) throw new VolumeBackendError('the image refers to other files (backing file or data file); only self-contained images can be written to volumes')
  if (info.virtualSize > maxBytes) throw new VolumeBackendError(`the image's virtual size (${info.virtualSize} bytes) is larger than the volume (${maxBytes} bytes)`)
  return info
}

/**
 * Scratch directories are named for the process that made them (`.scratch-<host name>-<pid>-…`): a process killed
 * in a copy leaves its image's bytes there, and the next start removes what dead processes of this machine left
 * (removeDeadScratch) — never what a live process, maybe another pcc-server sharing the folder, is using.
 */
const machineScratch = () => `.scratch-${hostname()}-`

/** Runs `use` with a private scratch directory under `parent` (image bytes on their way), removed afterwards. */
export async function withScratchDir<T>(parent: string, use: (dir: string) => Promise<T>): Promise<T> {
  await mkdir(parent, { recursive: true })
  const dir = await mkdtemp(join(parent, `${machineScratch()}${process.pid}-`))
  try {
    return await use(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Removes the scratch directories under `parent` that processes of this machine no longer running left (at start). */
export async function removeDeadScratch(parent: string): Promise<void> {
  const ours = machineScratch()
  for (const name of await readdir(parent).catch(() => [])) {
    const pid = name.startsWith(ours) ? Number(/^(\d+)-/.exec(name.slice(ours.length))?.[1]) : NaN
    if (Number.isInteger(pid) && !running(pid)) await rm(join(parent, name), { recursive: true, force: true })
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
