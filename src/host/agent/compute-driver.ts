/**
 * The agent's compute driver, chosen by `"driver"` in agent.json: `simulated` (default) or `qemu`. The QEMU driver
 * gets its image bytes and moves cold-migration disks through the control plane's host-credential endpoints
 * (`/resmgr/v1/hosts/{id}/images/…`, `/transfers/…`): a host never accepts a control connection.
 */
import type { IncomingMessage } from 'node:http'
import { networkInterfaces } from 'node:os'
import type { Readable } from 'node:stream'
import type { ComputeDriver, ImagesType } from '../../contracts/host/compute-driver.js'
import { QemuDriver } from '../compute/qemu/qemu-driver.js'
import { SimulatedDriver } from '../compute/simulated/simulated-driver.js'
import type { HostFacts } from '../../contracts/host/facts.js'
import type { CephAccess } from './ceph-access.js'

export interface DriverSettings {
  driver?: string
  /** Simulated driver: base operation time and capacity (defaults: 20 ms, the host's own CPU/RAM/disk). */
  simulated?: { delay_ms?: number; vcpus?: number; memory_mb?: number; disk_gb?: number }
  /**
   * QEMU driver: `accel` auto (try KVM, fall back to TCG) | kvm | tcg; capacity offered to the scheduler (default:
   * the host's own); seconds a graceful stop waits before a hard one (default 30, at most 30: the command's time).
   */
  qemu?: {
    accel?: 'auto' | 'kvm' | 'tcg'
    vcpus?: number
    memory_mb?: number
    disk_gb?: number
    shutdown_timeout_seconds?: number
    binary?: string
    /** The address other hosts send live migrations to (default: the host's first non-loopback IPv4 address). */
    migration_address?: string
    /** Where guests' sockets go (default `<root>/run/pcc`). */
    run_dir?: string
    /** Where guests' disks live (Nova's images_type): `rbd` (the default when the cloud has Ceph) or `qcow2` (files here). */
    images_type?: ImagesType
  }
}

/** The agent's own calls to the control plane for its host (`/resmgr/v1/hosts/{id}` + path), streaming. */
export type HostStream = (method: string, path: string, body?: Readable) => Promise<IncomingMessage>

export const DRIVERS = ['simulated', 'qemu'] as const

function firstAddress(): string {
  const all = Object.values(networkInterfaces()).flat()
  return all.find((a) => a && a.family === 'IPv4' && !a.internal)?.address ?? '127.0.0.1'
}

export async function createComputeDriver(
  root: string,
  settings: DriverSettings,
  facts: HostFacts,
  host: HostStream,
  log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void,
  ceph?: CephAccess,
): Promise<ComputeDriver> {
  const kind = settings.driver ?? 'simulated'
  if (kind === 'simulated') {
    const sim = settings.simulated ?? {}
    return new SimulatedDriver({
      hostname: facts.hostname,
      vcpus: sim.vcpus ?? facts.cpu.count,
      memoryMb: sim.memory_mb ?? facts.memory_mb,
      diskGb: sim.disk_gb ?? facts.disk_gb,
      delayMs: sim.delay_ms ?? 20,
      failureRate: 0,
    })
  }
  if (kind !== 'qemu') throw new Error(`driver ${kind} is not supported by this agent (one of ${DRIVERS.join(', ')})`)
  const q = settings.qemu ?? {}
  const drain = async (res: IncomingMessage) => {
    res.resume()
    await new Promise((resolve) => res.once('end', resolve))
  }
  const driver = new QemuDriver({
    hostname: facts.hostname,
    root,
    vcpus: q.vcpus ?? facts.cpu.count,
    memoryMb: q.memory_mb ?? facts.memory_mb,
    diskGb: q.disk_gb ?? facts.disk_gb,
    accel: q.accel,
    binary: q.binary,
    shutdownTimeoutMs: q.shutdown_timeout_seconds === undefined ? undefined : q.shutdown_timeout_seconds * 1000,
    migrationAddress: q.migration_address ?? firstAddress(),
    runDir: q.run_dir,
    ceph: ceph && { client: ceph.client, pools: ceph.pools },
    imagesType: q.images_type,
    images: { open: (image) => host('GET', `/images/${image.id}/file`) },
    transfers: {
      upload: async (serverId, name, data) => drain(await host('PUT', `/transfers/${serverId}/${name}`, data)),
      download: (serverId, name) => host('GET', `/transfers/${serverId}/${name}`),
    },
    log,
  })
  await driver.start()
  return driver
}
