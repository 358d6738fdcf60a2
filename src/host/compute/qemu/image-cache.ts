/**
 * The host's image cache: each image is fetched from the control plane once, verified while it streams to a
 * `.part` file (Glance's `os_hash_value`, else the MD5 `checksum`, as python-glanceclient checks), inspected, and
 * renamed into place. Guests' disks are qcow2 overlays on these files, so a cached image is never rewritten.
 *
 * Never trust a user's image to say what it is (Nova's format inspector; docs/qemu.md, "Images and disks"): the format comes from
 * the image service and is passed to every QEMU tool explicitly; a disk that is not of that format, a qcow2 with a
 * backing file or an external data file, or a "raw" image that is really another format is refused.
 */
import { createHash } from 'node:crypto'
import { closeSync, createWriteStream, existsSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { DriverError, type GuestImageRef } from '../../../contracts/host/compute-driver.js'
import { privateDir, type HostPaths } from './host-paths.js'
import { qemuImg } from './qemu-img.js'

/** Where image bytes come from: the control plane's host-credential endpoint on an agent, anything in tests. */
export interface ImageSource {
  open(image: GuestImageRef): Promise<Readable>
}

export interface CachedImage {
  id: string
  file: string
  /** The format QEMU opens it with: `raw` or `qcow2` for disks; `kernel`/`ramdisk` files are not disks. */
  format: 'raw' | 'qcow2' | 'file'
  size: number
  virtualSize: number
}

/** Glance disk formats the driver boots, and how QEMU opens them. */
const DISK_FORMATS: Record<string, 'raw' | 'qcow2' | 'file'> = { raw: 'raw', qcow2: 'qcow2', ami: 'raw', aki: 'file', ari: 'file' }

/** Magic numbers of formats a "raw" image must not secretly be (offset, bytes, name). */
const MAGICS: [number, Buffer, string][] = [
  [0, Buffer.from('QFI\xfb', 'latin1'), 'qcow2'],
  [0, Buffer.from('KDMV'), 'vmdk'],
  [0, Buffer.from('vhdxfile'), 'vhdx'],
  [0, Buffer.from('conectix'), 'vpc'],
  [0x40, Buffer.from([0x7f, 0x10, 0xda, 0xbe]), 'vdi'],
  [0, Buffer.from('LUKS\xba\xbe', 'latin1'), 'luks'],
]

function detectFormat(file: string): string | undefined {
  const head = Buffer.alloc(0x48)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, head, 0, head.length, 0)
  } finally {
    closeSync(fd)
  }
  return MAGICS.find(([offset, magic]) => head.subarray(offset, offset + magic.length).equals(magic))?.[2]
}

/** A pass-through stream that hashes what flows. */
function hashing(algorithms: string[]): Transform & { digests(): Record<string, string>; bytes(): number } {
  const hashes = algorithms.map((a) => [a, createHash(a)] as const)
  let bytes = 0
  const t = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length
      for (const [, h] of hashes) h.update(chunk)
      cb(null, chunk)
    },
  }) as Transform & { digests(): Record<string, string>; bytes(): number }
  t.digests = () => Object.fromEntries(hashes.map(([a, h]) => [a, h.digest('hex')]))
  t.bytes = () => bytes
  return t
}

export class ImageCache {
  private readonly inflight = new Map<string, Promise<CachedImage>>()

  constructor(
    private readonly paths: HostPaths,
    private readonly source: ImageSource,
  ) {}

  /** The image in the cache, fetched and checked first if it is not there yet (concurrent callers share one fetch). */
  get(image: GuestImageRef): Promise<CachedImage> {
    const running = this.inflight.get(image.id)
    if (running) return running
    const p = this.fetch(image).finally(() => this.inflight.delete(image.id))
    this.inflight.set(image.id, p)
    return p
  }

  /** The cached copy, if there is one. */
  cached(imageId: string): CachedImage | undefined {
    const { file, meta } = this.paths.image(imageId)
    if (!existsSync(file) || !existsSync(meta)) return undefined
    return JSON.parse(readFileSync(meta, 'utf8')) as CachedImage
  }

  private async fetch(image: GuestImageRef): Promise<CachedImage> {
    const have = this.cached(image.id)
    if (have) {
      // Its last use, for prune().
      const now = new Date()
      utimesSync(have.file, now, now)
      return have
    }
    const format = DISK_FORMATS[image.diskFormat]
    if (!format) throw new DriverError(`image ${image.id} has disk_format ${image.diskFormat}, which the qemu driver does not boot (raw, qcow2, ami, aki, ari)`, 400)
    const { file, meta, part } = this.paths.image(image.id)
    privateDir(this.paths.images)
    const algo = image.osHashValue && image.osHashAlgo ? image.osHashAlgo : undefined
    const expected = algo ? { algo, value: image.osHashValue! } : image.checksum ? { algo: 'md5', value: image.checksum } : undefined
    if (!expected) throw new DriverError(`image ${image.id} has neither os_hash_value nor checksum: its bytes cannot be verified`, 400)
    const hash = hashing([expected.algo])
    try {
      let source: Readable
      try {
        source = await this.source.open(image)
      } catch (err) {
        throw err instanceof DriverError ? err : new DriverError(`image ${image.id} could not be fetched: ${(err as Error).message}`)
      }
      await pipeline(source, hash, createWriteStream(part)).catch((err: Error) => {
        throw new DriverError(`image ${image.id} could not be fetched: ${err.message}${(err as NodeJS.ErrnoException).code === 'ENOSPC' ? ' (the host is out of disk space)' : ''}`)
      })
      const got = hash.digests()[expected.algo]
      if (got !== expected.value.toLowerCase()) {
        throw new DriverError(`image ${image.id} failed verification: its ${expected.algo} is ${got}, the image service says ${expected.value}`)
      }
      if (image.size !== null && hash.bytes() !== image.size) throw new DriverError(`image ${image.id} is ${hash.bytes()} bytes, the image service says ${image.size}`)
      const virtualSize = format === 'file' ? hash.bytes() : await this.inspect(image, part, format)
      const entry: CachedImage = { id: image.id, file, format, size: hash.bytes(), virtualSize }
      renameSync(part, file)
      writeFileSync(meta, JSON.stringify(entry))
      return entry
    } finally {
      rmSync(part, { force: true })
    }
  }

  /** Refuses what is not a plain disk of the declared format; answers its virtual size. */
  private async inspect(image: GuestImageRef, file: string, format: 'raw' | 'qcow2'): Promise<number> {
    const detected = detectFormat(file)
    if (format === 'raw' && detected) throw new DriverError(`image ${image.id} is declared ${image.diskFormat} but holds a ${detected} image: refused (a disk is never opened as another format than its image says)`, 400)
    let info: Record<string, unknown>
    try {
      info = await qemuImg.info(file, format)
    } catch (err) {
      throw new DriverError(`image ${image.id} is not a valid ${format} disk: ${(err as Error).message}`, 400)
    }
    if (info['backing-filename'] || info['full-backing-filename']) throw new DriverError(`image ${image.id} has a backing file (${String(info['backing-filename'])}): refused`, 400)
    const specific = (info['format-specific'] as { data?: Record<string, unknown> } | undefined)?.data
    if (specific?.['data-file']) throw new DriverError(`image ${image.id} has an external data file (${String(specific['data-file'])}): refused`, 400)
    return Number(info['virtual-size'])
  }

  /**
   * Nova's cache manager, simply: removes cached images no guest uses (`inUse`) that nobody used for `maxAgeMs`, and
   * `.part` files of downloads that died with their agent. A base image still under an overlay is never removed.
   */
  prune(inUse: Set<string>, maxAgeMs: number, now = Date.now()): string[] {
    if (!existsSync(this.paths.images)) return []
    const removed: string[] = []
    for (const name of readdirSync(this.paths.images)) {
      const path = `${this.paths.images}/${name}`
      if (name.endsWith('.json') || !existsSync(path)) continue
      const age = now - statSync(path).mtimeMs
      if (name.endsWith('.part')) {
        if (!this.inflight.has(name.slice(0, -'.part'.length)) && age > 3_600_000) rmSync(path, { force: true })
        continue
      }
      if (inUse.has(name) || this.inflight.has(name) || age < maxAgeMs) continue
      rmSync(path, { force: true })
      rmSync(`${path}.json`, { force: true })
      removed.push(name)
    }
    return removed
  }
}
