/**
 * RBD images as pcc uses them, through Ceph's own `rbd` command (Debian's ceph-common): the control plane for
 * image bytes, hosts for volumes and guest disks. A process speaks as one cephx user, named by a ceph.conf that
 * also names its keyring (`clientConf` writes one), so the same file serves `rbd` and QEMU's rbd driver.
 *
 * Snapshots that others are cloned from are protected, as Glance and Cinder leave them. Removing an image or a
 * snapshot first flattens the clones made from it (copying the bytes they still share), so a delete never fails
 * because of a child and never takes a child's bytes with it (docs/ceph.md, "Clones").
 */
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

/** How a process reaches Ceph: a ceph.conf naming the monitors and the keyring, and the cephx user (without `client.`). */
export interface CephClient {
  conf: string
  user: string
}

/** A failure of Ceph or of the `rbd` command, with its message for the operator. */
export class CephError extends Error {
  override name = 'CephError'
  /** The errno rbd exited with, when it ran and failed. */
  readonly errno?: number
  constructor(message: string, errno?: number) {
    super(message)
    this.errno = errno
  }
}

const ENOENT = 2
const EBUSY = 16
const EEXIST = 17
const EINVAL = 22
const ENOTEMPTY = 39
/** How long a dead client's watch on an image may last: the OSDs' osd_client_watch_timeout (30 s) and a margin. */
const WATCH_TIMEOUT_MS = 40_000

/**
 * How long a client waits for the monitors when it connects. librados waits 300 s by default, and QEMU connects
 * inside `blockdev-add`, holding its monitor that long: an attach during a Ceph outage would outlive the host
 * command's 60 s, and a cluster back by then would leave a node in the guest that nobody asked for.
 */
export const MOUNT_TIMEOUT_SECONDS = 20

/**
 * Writes the ceph.conf a process uses: the cluster's conf as given, plus its own user's keyring, so neither `rbd`
 * nor QEMU needs a key on its command line, and a bounded wait for the monitors.
 */
export function clientConf(clusterConf: string, user: string, keyring: string, path: string): CephClient {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${clusterConf.trimEnd()}\n\n[client.${user}]\nkeyring = ${keyring}\nclient mount timeout = ${MOUNT_TIMEOUT_SECONDS}\n`, { mode: 0o600 })
  return { conf: path, user }
}

/** Image and pool names pcc makes are ids and fixed words; anything else never reaches a command line. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

function checkName(kind: string, name: string): string {
  if (!NAME.test(name)) throw new CephError(`invalid RBD ${kind} name ${JSON.stringify(name)}`)
  return name
}

/** `pool/image` or `pool/image@snap`, checked. */
export function spec(pool: string, image: string, snap?: string): string {
  return `${checkName('pool', pool)}/${checkName('image', image)}${snap === undefined ? '' : `@${checkName('snapshot', snap)}`}`
}

/** rbd exits with the errno of what failed (2: no such image, 16: busy or already protected, 17: exists, 22: invalid, 39: has snapshots). */
function errnoOf(code: unknown): number | undefined {
  return typeof code === 'number' && code > 0 ? code : undefined
}

/** The last lines of rbd's stderr that say something (librbd prefixes them with a timestamp and a thread). */
function reason(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.replace(/^\S+ \S+ -1 /, '').trim()).filter(Boolean)
  return lines.slice(-2).join('; ')
}

export interface RbdImageInfo {
  size: number
  /** The snapshot this image was cloned from, while it still shares bytes with it. */
  parent?: { pool: string; image: string; snapshot: string }
}

/** QEMU's rbd block node options: an image (or snapshot) and the client that opens it. */
export interface RbdBlockdev {
  driver: 'rbd'
  pool: string
  image: string
  snapshot?: string
  conf: string
  user: string
}

export class Rbd {
  constructor(readonly client: CephClient) {}

  private args(args: string[]): string[] {
    return ['--conf', this.client.conf, '--id', this.client.user, ...args]
  }

  /** Runs `rbd` or `ceph`; resolves with its standard output, or rejects with a CephError carrying its reason and errno. */
  private exec(program: 'rbd' | 'ceph', args: string[], timeoutMs: number): Promise<string> {
    const what = `${program} ${args[0] ?? ''}`
    return new Promise((resolve, reject) => {
      execFile(program, this.args(args), { timeout: timeoutMs, maxBuffer: 16 << 20, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
        if (!err) return resolve(stdout)
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return reject(new CephError(`the ${program} command is not installed (Debian package ceph-common)`))
        if (err.killed) return reject(new CephError(`${what} did not answer within ${timeoutMs / 1000} s: is the Ceph cluster reachable?`))
        reject(new CephError(`${what} failed: ${reason(stderr) || err.message}`, errnoOf(err.code)))
      })
    })
  }

  /** Runs `rbd` as this client. */
  run(args: string[], timeoutMs = 120_000): Promise<string> {
    return this.exec('rbd', args, timeoutMs)
  }

  /** Runs Ceph's `ceph` command as this client (the monitors' commands: `df`, `auth`). */
  ceph(args: string[], timeoutMs = 30_000): Promise<string> {
    return this.exec('ceph', [...args, '--connect-timeout', String(Math.ceil(timeoutMs / 1000) - 5)], timeoutMs)
  }

  /** Resolves when the pool is reachable with this user's rights (a listing needs the monitors and the OSDs). */
  async check(pool: string, timeoutSeconds = 15): Promise<void> {
    // librados waits 300 s for monitors by default; a start-up check says sooner that none answers.
    await this.run(['ls', '--client-mount-timeout', String(timeoutSeconds), checkName('pool', pool)], (timeoutSeconds + 5) * 1000)
  }

  async info(pool: string, image: string, snap?: string): Promise<RbdImageInfo | undefined> {
    try {
      const out = JSON.parse(await this.run(['info', '--format', 'json', spec(pool, image, snap)])) as { size: number; parent?: { pool: string; image: string; snapshot: string } }
      return { size: out.size, parent: out.parent && { pool: out.parent.pool, image: out.parent.image, snapshot: out.parent.snapshot } }
    } catch (err) {
      if (err instanceof CephError && err.errno === ENOENT) return undefined
      throw err
    }
  }

  async list(pool: string): Promise<string[]> {
    return JSON.parse(await this.run(['ls', '--format', 'json', checkName('pool', pool)])) as string[]
  }

  async create(pool: string, image: string, bytes: number): Promise<void> {
    await this.run(['create', '--size', `${bytes}B`, spec(pool, image)])
  }

  async resize(pool: string, image: string, bytes: number): Promise<void> {
    await this.run(['resize', '--no-progress', '--size', `${bytes}B`, spec(pool, image)])
  }

  async rename(pool: string, from: string, to: string): Promise<void> {
    await this.run(['rename', spec(pool, from), spec(pool, to)])
  }

  async snapshots(pool: string, image: string): Promise<string[]> {
    const snaps = JSON.parse(await this.run(['snap', 'ls', '--format', 'json', spec(pool, image)])) as { name: string }[]
    return snaps.map((s) => s.name)
  }

  /** A protected snapshot (clones can be made of it); an existing one is left as it is. */
  async snapshot(pool: string, image: string, snap: string): Promise<void> {
    await this.run(['snap', 'create', '--no-progress', spec(pool, image, snap)]).catch((err: CephError) => {
      if (err.errno !== EEXIST) throw err
    })
    await this.run(['snap', 'protect', spec(pool, image, snap)]).catch((err: CephError) => {
      if (err.errno !== EBUSY) throw err // EBUSY: already protected
    })
  }

  /** Removes a snapshot, flattening its clones first; a missing one is not an error. */
  async removeSnapshot(pool: string, image: string, snap: string): Promise<void> {
    if (!(await this.info(pool, image)) || !(await this.snapshots(pool, image)).includes(snap)) return
    for (const child of await this.children(pool, image, snap)) await this.flatten(child.pool, child.image)
    await this.run(['snap', 'unprotect', spec(pool, image, snap)]).catch((err: CephError) => {
      if (err.errno !== EINVAL) throw err // EINVAL: not protected
    })
    await this.run(['snap', 'rm', '--no-progress', spec(pool, image, snap)])
  }

  async children(pool: string, image: string, snap: string): Promise<{ pool: string; image: string }[]> {
    return JSON.parse(await this.run(['children', '--format', 'json', spec(pool, image, snap)])) as { pool: string; image: string }[]
  }

  /** A copy-on-write clone of a protected snapshot. */
  async clone(from: { pool: string; image: string; snap: string }, pool: string, image: string): Promise<void> {
    await this.run(['clone', spec(from.pool, from.image, from.snap), spec(pool, image)])
  }

  /** Copies into a clone what it still reads from its parent, so it no longer depends on it (`rbd flatten`). */
  async flatten(pool: string, image: string): Promise<void> {
    await this.run(['flatten', '--no-progress', spec(pool, image)], 3_600_000)
  }

  /** Removes an image with its snapshots (flattening their clones first); a missing image is not an error. */
  async remove(pool: string, image: string): Promise<void> {
    // Most images have no snapshot: one `rbd rm` then, and the long way only when it says there are some.
    const removed = await this.rm(pool, image).then(
      () => true,
      (err: CephError) => {
        if (err.errno === ENOENT) return true
        if (err.errno === ENOTEMPTY) return false
        throw err
      },
    )
    if (removed) return
    for (const snap of await this.snapshots(pool, image)) await this.removeSnapshot(pool, image, snap)
    await this.rm(pool, image)
  }

  /**
   * `rbd rm`, again while the image still has a watcher (EBUSY) for up to WATCH_TIMEOUT_MS: a client that died
   * without closing the image (a QEMU that exited when its incoming live migration was cancelled) keeps its watch
   * until the OSDs time it out, 30 s by default, as rbd's own message says. A client really using it outlasts that.
   */
  private async rm(pool: string, image: string): Promise<void> {
    const deadline = Date.now() + WATCH_TIMEOUT_MS
    for (;;) {
      try {
        await this.run(['rm', '--no-progress', spec(pool, image)], 3_600_000)
        return
      } catch (err) {
        if ((err as CephError).errno !== EBUSY || Date.now() > deadline) throw err
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
  }

  /** Writes everything `source` yields into a new image (`rbd import` from standard input). */
  async importFrom(source: Readable, pool: string, image: string): Promise<void> {
    const child = spawn('rbd', this.args(['import', '--no-progress', '-', spec(pool, image)]), { stdio: ['pipe', 'ignore', 'pipe'] })
    const done = this.ended(child, 'import')
    try {
      await pipeline(source, child.stdin as Writable)
    } catch (err) {
      // rbd that stopped reading (refused, failed) breaks the pipe: its own reason is the one to report.
      const failed = await done.then(() => undefined, (childErr: CephError) => childErr)
      child.kill('SIGKILL')
      throw failed && (err as NodeJS.ErrnoException).code === 'EPIPE' ? failed : err
    }
    await done
  }

  /** A stream of an image's (or snapshot's) bytes (`rbd export` to standard output). */
  exportTo(pool: string, image: string, snap?: string): Readable {
    const child = spawn('rbd', this.args(['export', '--no-progress', spec(pool, image, snap), '-']), { stdio: ['ignore', 'pipe', 'pipe'] })
    const stream = child.stdout
    this.ended(child, 'export').catch((err: Error) => stream.destroy(err))
    stream.on('close', () => child.kill('SIGKILL'))
    return stream
  }

  private ended(child: ReturnType<typeof spawn>, what: string): Promise<void> {
    let stderr = ''
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    return new Promise((resolve, reject) => {
      child.on('error', (err: NodeJS.ErrnoException) => reject(new CephError(err.code === 'ENOENT' ? 'the rbd command is not installed (Debian package ceph-common)' : err.message)))
      child.on('exit', (code, signal) => {
        if (code === 0) resolve()
        else reject(new CephError(`rbd ${what} failed: ${reason(stderr) || `exit ${code ?? signal}`}`, errnoOf(code)))
      })
    })
  }

  /** The clients that have an image open (its watchers), by address (`rbd status`); none for a missing image. */
  async watchers(pool: string, image: string): Promise<string[]> {
    try {
      const out = JSON.parse(await this.run(['status', '--format', 'json', spec(pool, image)])) as { watchers?: { address: string }[] }
      return (out.watchers ?? []).map((w) => w.address)
    } catch (err) {
      if (err instanceof CephError && err.errno === ENOENT) return []
      throw err
    }
  }

  /** The clients holding a lock on an image (its exclusive lock's owner), by address (`rbd lock ls`); none for a missing image. */
  async lockers(pool: string, image: string): Promise<string[]> {
    try {
      return (JSON.parse(await this.run(['lock', 'ls', '--format', 'json', spec(pool, image)])) as { address: string }[]).map((l) => l.address)
    } catch (err) {
      if (err instanceof CephError && err.errno === ENOENT) return []
      throw err
    }
  }

  /** Refuses a client (by its address, as `watchers` gives it) any further I/O on the cluster for `seconds`. */
  async blocklist(address: string, seconds: number): Promise<void> {
    if (!/^[0-9A-Za-z.:[\]-]+\/\d+$/.test(address)) throw new CephError(`invalid Ceph client address ${JSON.stringify(address)}`)
    await this.ceph(['osd', 'blocklist', 'add', address, String(seconds)])
  }

  /** What a pool holds and may still hold (`ceph df`: its bytes stored and the bytes it can still take). */
  async poolUsage(pool: string): Promise<{ storedBytes: number; availableBytes: number }> {
    const out = await this.ceph(['df', '--format', 'json'])
    const found = (JSON.parse(out) as { pools: { name: string; stats: { stored: number; max_avail: number } }[] }).pools.find((p) => p.name === pool)
    if (!found) throw new CephError(`the Ceph pool ${pool} does not exist`, ENOENT)
    return { storedBytes: found.stats.stored, availableBytes: found.stats.max_avail }
  }

  /** The QEMU block node (QMP `blockdev-add`) that opens an image or snapshot through librbd with this client's identity. */
  blockdev(pool: string, image: string, snap?: string): RbdBlockdev {
    spec(pool, image, snap)
    return { driver: 'rbd', pool, image, ...(snap === undefined ? {} : { snapshot: snap }), conf: this.client.conf, user: this.client.user }
  }
}
