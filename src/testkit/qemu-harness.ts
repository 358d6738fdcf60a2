/**
 * The QEMU driver conformance suite's harness (test/drivers/qemu-conformance.test.ts, and over guest disks in Ceph
 * test/ceph/qemu-rbd-conformance.test.ts): real guests (the pcc guest image under TCG or KVM), two hosts in scratch
 * roots on this machine, images served from files (and, with Ceph, from the images pool as the control plane keeps
 * them), cold-migration disks through a directory standing in for the control plane. The evidence is the guest's own
 * console: `pcc-guest: boot N` counted on its own disk, and a `pcc-guest: tick N` its user data prints every second
 * (a guest that was paused, suspended or migrated live goes on counting where it was).
 */
import { execFile } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { createReadStream, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import type { ComputeDriver, GuestNic, GuestSpec, VolumeConnection, VolumeThrottle } from '../contracts/host/compute-driver.js'
import { tapName } from '../contracts/network/names.js'
import { exportName } from '../contracts/host/volume.js'
import { IMAGE_SNAPSHOT } from '../contracts/host/rbd-names.js'
import { QemuDriver, type DiskTransfers } from '../host/compute/qemu/qemu-driver.js'
import { QmpClient } from '../host/compute/qemu/qmp.js'
import type { DriverHarness } from '../host/compute/conformance/suite.js'
import { ExportManager } from '../host/storage/exports/export-manager.js'
import { clientConf, Rbd, type CephClient } from '../lib/ceph/rbd.js'
import { metadataFiles } from '../server/metadata/documents.js'
import { hostCaps } from '../server/ceph/host-users.js'
import { DiskFencing } from '../server/ceph/fencing.js'
import type { CephCluster } from './ceph.js'
import { freePort } from './harness.js'
import { facts, fileImage, guestImage, killQemusUnder, lastBoot, lastTick, qemuLeftovers } from './qemu.js'

const exec = promisify(execFile)
const BOOT_MS = 90_000

/** Guest disks in Ceph: the cluster and the pools of this run (freshPccPools). */
export interface HarnessCeph {
  cluster: CephCluster
  pools: { images: string; volumes: string; vms: string }
}

/**
 * The guest image as the control plane's image store keeps it in Ceph: raw, in `images/<id>` with the protected
 * snapshot `snap`; and a host's own cephx user (the caps a real host gets) whose conf QEMU and rbd read.
 */
async function cephHost(ceph: HarnessCeph, work: string, qcow2: string): Promise<{ client: CephClient; fencing: DiskFencing; raw: string; remove(): Promise<void> }> {
  const clusterConf = readFileSync(ceph.cluster.conf, 'utf8')
  const admin = new Rbd(clientConf(clusterConf, ceph.cluster.user, ceph.cluster.keyring, join(work, 'admin.conf')))
  const raw = join(work, 'guest-image.raw')
  await exec('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', qcow2, raw])
  await admin.importFrom(createReadStream(raw), ceph.pools.images, 'guest-image')
  await admin.snapshot(ceph.pools.images, 'guest-image', IMAGE_SNAPSHOT)
  const user = `pcc-test-host-${randomBytes(3).toString('hex')}`
  const [key] = JSON.parse(await admin.ceph(['auth', 'get-or-create', `client.${user}`, ...hostCaps(ceph.pools), '--format', 'json'])) as { key: string }[]
  writeFileSync(join(work, 'host.keyring'), `[client.${user}]\n\tkey = ${key.key}\n`, { mode: 0o600 })
  return {
    client: clientConf(clusterConf, user, join(work, 'host.keyring'), join(work, 'host.conf')),
    // The control plane's fencing, with its (here the admin's) identity.
    fencing: new DiskFencing({ rbd: admin, pools: ceph.pools, clusterConf }),
    raw,
    remove: async () => void (await admin.ceph(['auth', 'del', `client.${user}`]).catch(() => {})),
  }
}

export async function qemuHarness(ceph?: HarnessCeph): Promise<DriverHarness> {

  const image = await guestImage()
  const work = mkdtempSync(join(tmpdir(), 'pcc-qemu-conf-'))
  // With Ceph the image is raw in the images pool, as the control plane keeps it: booting clones it.
  const onCeph = ceph && (await cephHost(ceph, work, image.disk.path))
  const files = new Map<string, string>([['guest-image', onCeph ? onCeph.raw : image.disk.path]])
  const guest = fileImage('guest-image', files.get('guest-image')!, onCeph ? 'raw' : 'qcow2')
  writeFileSync(join(work, 'not-a-disk'), 'these bytes are not a qcow2 disk\n')
  files.set('not-a-disk', join(work, 'not-a-disk'))
  const transfers: DiskTransfers = {
    upload: (serverId, name, data) => pipeline(data, createWriteStream(join(work, `${serverId}-${name}`))),
    download: async (serverId, name) => {
      const file = join(work, `${serverId}-${name}`)
      if (!existsSync(file)) throw new Error(`no transfer ${name} for ${serverId}`)
      return createReadStream(file)
    },
  }
  const roots: string[] = []
  const host = async (name: string) => {
    const root = mkdtempSync(join(tmpdir(), `pcc-${name}-`))
    roots.push(root)
    const d = new QemuDriver({
      hostname: name, root, vcpus: 2, memoryMb: 4096, diskGb: 20, transfers, migrationAddress: '127.0.0.1',
      images: { open: async (img) => createReadStream(files.get(img.id)!) },
      shutdownTimeoutMs: 30_000, softRebootTimeoutMs: 30_000,
      ...(onCeph && { ceph: { client: onCeph.client, pools: ceph.pools } }),
    })
    await d.start()
    return d
  }
  const rootOf = (d: ComputeDriver) => (d as unknown as QemuDriver).options.root
  const spec = (serverId: string, flavor = {}): GuestSpec => ({
    serverId, instanceName: `instance-${serverId.slice(-8)}`, imageId: 'guest-image', hostname: 'vm', userData: null, image: guest,
    flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {}, ...flavor },
    configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId))).map(([k, v]) => [k, v.toString('base64')])),
  })
  const consoleOf = (d: ComputeDriver, id: string) => d.consoleOutput(id).catch(() => '')
  // Volumes are raw files served as a storage host serves them: qemu-storage-daemon, NBD over TLS-PSK.
  const exports = new ExportManager(join(work, 'exports'))
  const volume = () => servedVolume(exports, work)
  // NICs on taps made as a host's network agent makes them for a port bound to it (links.ts), removed at close.
  const taps: string[] = []
  const nic = async (): Promise<GuestNic> => {
    const portId = randomUUID()
    const macAddress = `fa:16:3e:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`
    const tap = tapName(portId)
    await exec('ip', ['tuntap', 'add', 'dev', tap, 'mode', 'tap', 'vnet_hdr'])
    taps.push(tap)
    await exec('ip', ['link', 'set', 'dev', tap, 'up'])
    return { portId, macAddress, networkId: randomUUID(), mtu: 1500 }
  }
  return {
    hosts: async () => [await host('qemu-a'), await host('qemu-b')],
    nic,
    spec,
    failingSpawn: (_d, serverId) => ({ ...spec(serverId), imageId: 'not-a-disk', image: fileImage('not-a-disk', files.get('not-a-disk')!, 'qcow2') }),
    booted: async (d, id, n) => {
      let text = ''
      const deadline = Date.now() + BOOT_MS
      while (Date.now() < deadline) {
        text = await consoleOf(d, id)
        const after = text.slice(text.lastIndexOf('pcc-guest: boot '))
        if (lastBoot(text) === n && /pcc-guest: ready/.test(after)) return
        await new Promise((r) => setTimeout(r, 200))
      }
      throw new Error(`boot ${n} not seen within ${BOOT_MS} ms; console:\n${text.slice(-2000)}`)
    },
    boots: async (d, id) => lastBoot(await consoleOf(d, id)),
    continues: async (d, id) => {
      const start = await consoleOf(d, id)
      const before = lastTick(start)
      const deadline = Date.now() + 20_000
      for (;;) {
        const text = await consoleOf(d, id)
        const fresh = text.slice(start.length)
        if (/pcc-guest: userspace up/.test(fresh)) throw new Error(`the guest started again instead of running on:\n${fresh.slice(-1500)}`)
        if (lastTick(fresh) > before) return
        if (Date.now() > deadline) throw new Error(`no tick after ${before} within 20 s:\n${text.slice(-1500)}`)
        await new Promise((r) => setTimeout(r, 200))
      }
    },
    // 1 MB/s: a TCG guest's memory stream then lasts seconds (its disks' mirrors go at full speed before it).
    slowLiveMigrations: (d, slow) => {
      ;(d as QemuDriver).migrationMaxBandwidth = slow ? 1_000_000 : undefined
    },
    leftovers: async (d, id) => qemuLeftovers(rootOf(d), id),
    volume,
    disksMove: true,
    snapshotFormat: onCeph ? 'raw' : 'qcow2',
    ...(onCeph && {
      sharedDisks: async (serverId: string) => (await new Rbd(onCeph.client).list(ceph.pools.vms)).filter((name) => name.startsWith(serverId)),
      // Fenced before the evacuation, as the control plane does: the dead QEMU's watch and lock go at once, where
      // they would otherwise hold the new guest's first write until the OSDs time the watch out (30 s).
      killGuest: async (d: ComputeDriver, serverId: string) => {
        await killQemusUnder(rootOf(d))
        await onCeph.fencing.fence(serverId, [])
      },
    }),
    close: async () => {
      await onCeph?.remove()
      for (const r of roots) await killQemusUnder(r)
      for (const tap of taps) await exec('ip', ['link', 'del', 'dev', tap]).catch(() => {})
      await exports.converge([])
      for (const r of [...roots, work]) rmSync(r, { recursive: true, force: true })
    },
  }
}

/** A 64 MiB raw volume served as a storage host serves it (qemu-storage-daemon, NBD over TLS-PSK), and its connection. */
export async function servedVolume(exports: ExportManager, work: string, throttle?: VolumeThrottle): Promise<VolumeConnection> {
  const volumeId = randomUUID()
  const file = join(work, `volume-${volumeId}.raw`)
  writeFileSync(file, '')
  truncateSync(file, 64 * 1024 * 1024)
  const key = { identity: `att-${randomUUID()}`, key: randomBytes(32).toString('hex') }
  const port = await freePort()
  await exports.converge([{ volumeId, blockdev: { driver: 'raw', file: { driver: 'file', filename: file } }, address: '127.0.0.1', port, generations: [0], keys: [key] }])
  const data = { host: '127.0.0.1', port, export: exportName(volumeId, 0), tls: 'psk' as const, psk_identity: key.identity, psk_key: key.key, volume_id: volumeId, attachment_id: key.identity, serial: volumeId }
  return { volumeId, device: '/dev/vdb', connection: { driver_volume_type: 'nbd', data }, ...(throttle ? { throttle } : {}) }
}

/**
 * A guest script (busybox ash) that runs `body` once for each new data disk, with `$d` its /sys/block directory and
 * `$n` its name. A disk is known by name and serial (the volume id): a volume attached right after another's detach
 * may take its name before the loop sees the first one go.
 */
export function forEachNewDisk(body: string): string {
  return `#!/bin/sh
seen=""
while true; do
  for d in /sys/block/vd[b-z]; do
    [ -e "$d" ] || continue
    n=\${d##*/}
    id=$n:$(cat $d/serial 2>/dev/null)
    case " $seen " in *" $id "*) continue ;; esac
    seen="$seen $id"
${body.trimEnd()}
  done
  for id in $seen; do
    b=/sys/block/\${id%%:*}
    { [ -e $b ] && [ "$(cat $b/serial 2>/dev/null)" = "\${id#*:}" ]; } || seen=$(echo " $seen " | sed "s/ $id / /")
  done
  sleep 1
done
`
}

/** One real guest on a QEMU driver of its own, beside an export manager serving it volumes (servedVolume). */
export interface VolumeGuest {
  work: string
  driver: QemuDriver
  exports: ExportManager
  serverId: string
  /** A QMP command to the guest's QEMU. */
  qmp<T>(command: string, args?: Record<string, unknown>): Promise<T>
  /** The matches of `pattern` on the guest's console once it shows at least `count` of them (3 min at most). */
  waitConsole(pattern: RegExp, count?: number, ms?: number): Promise<RegExpExecArray[]>
  close(): Promise<void>
}

/**
 * Boots the pcc guest image on a QemuDriver in a scratch root with `script` as its user data (from its config drive),
 * and waits for its `pcc-guest: ready`. The guest tests of volume features (QoS, encryption) run their checks in it.
 */
export async function startVolumeGuest(name: string, serverId: string, script: string): Promise<VolumeGuest> {
  const work = mkdtempSync(join(tmpdir(), `pcc-${name}-`))
  const exports = new ExportManager(join(work, 'exports'))
  const image = await guestImage()
  const guest = fileImage('guest-image', image.disk.path, 'qcow2')
  const driver = new QemuDriver({
    hostname: name, root: join(work, 'host'), vcpus: 2, memoryMb: 4096, diskGb: 20, shutdownTimeoutMs: 20_000,
    images: { open: async () => createReadStream(image.disk.path) },
  })
  const consoleText = () => driver.consoleOutput(serverId).catch(() => '')
  const handle: VolumeGuest = {
    work, driver, exports, serverId,
    qmp: async <T>(command: string, args?: Record<string, unknown>) => {
      const client = await QmpClient.connect(join(driver.options.root, 'run/pcc', `${serverId}.qmp`))
      try {
        return await client.execute<T>(command, args)
      } finally {
        client.close()
      }
    },
    waitConsole: async (pattern, count = 1, ms = 180_000) => {
      const deadline = Date.now() + ms
      for (;;) {
        const matches = [...(await consoleText()).matchAll(new RegExp(pattern.source, 'g'))]
        if (matches.length >= count) return matches
        if (Date.now() > deadline) throw new Error(`${pattern} not seen ${count} times; console:\n${(await consoleText()).slice(-2000)}`)
        await new Promise((r) => setTimeout(r, 500))
      }
    },
    close: async () => {
      await killQemusUnder(join(work, 'host'))
      await exports.converge([])
      rmSync(work, { recursive: true, force: true })
    },
  }
  try {
    await driver.start()
    await driver.spawn({
      serverId, instanceName: `instance-${serverId.slice(-8)}`, imageId: guest.id, hostname: 'vm', userData: null, image: guest,
      flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
      configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId, script))).map(([k, v]) => [k, v.toString('base64')])),
    })
    await handle.waitConsole(/pcc-guest: ready/)
    return handle
  } catch (err) {
    await handle.close()
    throw err
  }
}
