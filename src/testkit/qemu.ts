/**
 * Test helpers for real guests: whether this machine can run them (and why not, for a skip that names what is
 * missing), the pcc guest image, and a bare QEMU guest run directly (no pcc in between) for tests of the image
 * itself and for the benchmark's baseline. Every guest is a child process killed by `stop()`; callers call it in
 * `finally`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildGuestImage, guestImageUnavailable, type GuestImage } from '../guest-image/build.js'
import type { GuestImageRef } from '../contracts/host/compute-driver.js'
import { QmpClient } from '../host/compute/qemu/qmp.js'
import { pidfileOf, qemuProcesses, qemuProcessesUnder } from '../host/compute/qemu/guest-processes.js'
import type { InstanceFacts } from '../server/metadata/documents.js'

export const QEMU_BINARY = 'qemu-system-x86_64'

/** Why real guests cannot run here (a skip reason naming the missing capability), or undefined. */
export function realGuestsMissing(): string | undefined {
  if (spawnSync(QEMU_BINARY, ['--version']).error) return `${QEMU_BINARY} is not installed (Debian package qemu-system-x86)`
  if (spawnSync('qemu-img', ['--version']).error) return 'qemu-img is not installed (Debian package qemu-utils)'
  if (spawnSync('genisoimage', ['--version']).error) return 'genisoimage is not installed (config drives)'
  const image = guestImageUnavailable()
  return image ? `the guest image cannot be built: ${image}` : undefined
}

let built: Promise<GuestImage> | undefined
/** The pcc guest image (built once per machine, then cached). */
export function guestImage(): Promise<GuestImage> {
  return (built ??= buildGuestImage())
}

/** Waits until `read()` matches `pattern` (polled every 100 ms); rejects after `timeoutMs` with the text read. */
export async function waitForText(read: () => string, pattern: RegExp, timeoutMs: number, what = String(pattern)): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const text = read()
    const match = text.match(pattern)
    if (match) return match
    if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms; console:\n${text.slice(-3000)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export interface BareGuestOptions {
  disk: string
  diskFormat: 'qcow2' | 'raw'
  /** Boot on a copy-on-write snapshot of the disk (writes are thrown away). */
  snapshot?: boolean
  configDrive?: string
  kernel?: string
  initrd?: string
  append?: string
  memoryMb?: number
  accel?: 'tcg' | 'kvm'
  /** More QEMU arguments (a second disk, a NIC). */
  extraArgs?: string[]
}

export interface BareGuest {
  child: ChildProcess
  dir: string
  console(): string
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>
  qmp(): Promise<QmpClient>
  /** Kills QEMU (if still running) and removes the guest's scratch directory. */
  stop(): Promise<void>
}

/** QEMU started directly on `disk`, its serial port logged to a file and QMP on a unix socket. */
export function bareGuest(o: BareGuestOptions): BareGuest {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-bare-guest-'))
  const log = join(dir, 'console.log')
  const qmpPath = join(dir, 'qmp.sock')
  const args = [
    '-accel', o.accel ?? 'tcg', '-machine', 'pc', '-m', String(o.memoryMb ?? 256), '-nodefaults', '-no-user-config', '-display', 'none',
    '-drive', `file=${o.disk},format=${o.diskFormat},if=virtio${o.snapshot ? ',snapshot=on' : ''}`,
    ...(o.configDrive ? ['-drive', `file=${o.configDrive},format=raw,media=cdrom,if=ide,readonly=on`] : []),
    ...(o.kernel ? ['-kernel', o.kernel] : []),
    ...(o.initrd ? ['-initrd', o.initrd] : []),
    ...(o.append ? ['-append', o.append] : []),
    '-chardev', `file,id=serial0,path=${log}`, '-serial', 'chardev:serial0',
    '-qmp', `unix:${qmpPath},server=on,wait=off`,
    ...(o.extraArgs ?? []),
  ]
  const child = spawn(QEMU_BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const read = () => (existsSync(log) ? readFileSync(log, 'latin1') : '')
  return {
    child,
    dir,
    console: read,
    waitFor: (pattern, timeoutMs) => {
      if (child.exitCode !== null) return Promise.reject(new Error(`QEMU exited (${child.exitCode}): ${stderr}`))
      return waitForText(read, pattern, timeoutMs)
    },
    qmp: async () => {
      await waitForText(() => (existsSync(qmpPath) ? 'up' : ''), /up/, 10_000, 'QMP socket')
      return QmpClient.connect(qmpPath)
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** User data that prints `pcc-guest: tick N` every second: a guest that runs on (not restarted) keeps counting. */
export const TICKER = '#!/bin/sh\nn=0\nwhile true; do n=$((n+1)); echo "pcc-guest: tick $n"; sleep 1; done\n'

/** An image served from a file, described as the image service would (digests computed from the bytes). */
export function fileImage(id: string, path: string, diskFormat: string, properties: Record<string, string> = {}): GuestImageRef {
  const bytes = readFileSync(path)
  return {
    id, diskFormat, containerFormat: 'bare', size: bytes.length, virtualSize: null, checksum: createHash('md5').update(bytes).digest('hex'),
    osHashAlgo: 'sha512', osHashValue: createHash('sha512').update(bytes).digest('hex'), properties,
  }
}


/** Instance facts for a test guest (its name ends with the server id's last four characters). */
export function facts(serverId: string, userData = TICKER): InstanceFacts {
  return {
    uuid: serverId, name: `vm-${serverId.slice(-4)}`, hostname: `vm-${serverId.slice(-4)}`, displayId: 1, projectId: 'p1', availabilityZone: 'nova', launchIndex: 0,
    reservationId: 'r-1', flavorName: 'm1.tiny', imageId: 'guest-image', metadata: {}, key: null, userData: Buffer.from(userData).toString('base64'), securityGroups: [], nics: [],
  }
}

/** The last `pcc-guest: boot N` of a console. */
export function lastBoot(console: string): number {
  return Number([...console.matchAll(/pcc-guest: boot (\d+)\r?\n/g)].at(-1)?.[1] ?? 0)
}

/** The last `pcc-guest: tick N` of a console (the ticker user data counts every second). */
export function lastTick(console: string): number {
  return Number([...console.matchAll(/pcc-guest: tick (\d+)/g)].at(-1)?.[1] ?? 0)
}

/**
 * Kills every QEMU whose pidfile lies under `root` and waits for them to go: guests are daemonized, so a test that
 * failed halfway would otherwise leave them running after its scratch root is gone.
 */
export async function killQemusUnder(root: string): Promise<void> {
  const pids = qemuProcessesUnder(root)
  for (const pid of pids) process.kill(pid, 'SIGKILL')
  for (const pid of pids) await waitForText(() => (existsSync(`/proc/${pid}`) ? '' : 'gone'), /gone/, 10_000, `QEMU ${pid} to go`)
}

/** What a host still holds of a guest: its directory, sockets, a QEMU with its uuid. */
export function qemuLeftovers(root: string, serverId: string): string[] {
  const left: string[] = []
  if (existsSync(join(root, 'var/lib/pcc/instances', serverId))) left.push(`instance directory of ${serverId}`)
  const run = join(root, 'run/pcc')
  if (existsSync(run)) for (const f of readdirSync(run)) if (f.startsWith(serverId)) left.push(`socket ${f}`)
  for (const q of qemuProcesses()) {
    if (pidfileOf(q.argv).startsWith(root) && q.argv[q.argv.indexOf('-uuid') + 1] === serverId) left.push(`QEMU process ${q.pid}`)
  }
  return left
}

export { qemuProcessesUnder }
