/**
 * The simulated driver's metrics: a deterministic model of a guest's load from its state, so graphs, history and
 * diagnostics have something real-shaped to show without a hypervisor (docs/metrics.md, "Simulated hosts"). A
 * running guest keeps a quarter of each vCPU busy, uses half its memory and reads, writes, receives and sends at the
 * fixed rates of LOAD; a paused or stopped one adds nothing. Counters grow from the guest's first sample.
 */
import { POWER } from '../../../contracts/host/compute-driver.js'
import type { GuestSample, HostSample } from '../../../contracts/host/metrics.js'

/** What a running simulated guest does each second. */
export const LOAD = { cpuShare: 0.25, memoryShare: 0.5, readBps: 65_536, writeBps: 32_768, rxBps: 8192, txBps: 4096, packetBytes: 1024, requestBytes: 4096 }

const STATES: Record<number, GuestSample['state']> = {
  [POWER.RUNNING]: 'running',
  [POWER.PAUSED]: 'paused',
  [POWER.SHUTDOWN]: 'shutdown',
  [POWER.SUSPENDED]: 'suspended',
  [POWER.CRASHED]: 'crashed',
}

/** The state of a guest the meter needs. */
export interface MeteredGuest {
  serverId: string
  powerState: number
  vcpus: number
  memoryMb: number
  macs: string[]
}

interface Counters {
  at: number
  runningSince: number | null
  cpuNs: number
  rdBytes: number
  wrBytes: number
  rxBytes: number
  txBytes: number
}

export class SimulatedMeter {
  private readonly counters = new Map<string, Counters>()

  /** Samples `guests` at `now`, advancing each running guest's counters by the time since its last sample. */
  sample(guests: MeteredGuest[], now = Date.now()): GuestSample[] {
    const live = new Set(guests.map((g) => g.serverId))
    for (const id of this.counters.keys()) if (!live.has(id)) this.counters.delete(id)
    return guests.map((g) => this.sampleOne(g, now))
  }

  private sampleOne(g: MeteredGuest, now: number): GuestSample {
    const running = g.powerState === POWER.RUNNING
    const c = this.counters.get(g.serverId) ?? { at: now, runningSince: null, cpuNs: 0, rdBytes: 0, wrBytes: 0, rxBytes: 0, txBytes: 0 }
    const seconds = Math.max(0, now - c.at) / 1000
    if (running) {
      c.cpuNs += Math.round(seconds * g.vcpus * LOAD.cpuShare * 1e9)
      c.rdBytes += Math.round(seconds * LOAD.readBps)
      c.wrBytes += Math.round(seconds * LOAD.writeBps)
      c.rxBytes += Math.round(seconds * LOAD.rxBps)
      c.txBytes += Math.round(seconds * LOAD.txBps)
      c.runningSince ??= now
    } else {
      c.runningSince = null
    }
    c.at = now
    this.counters.set(g.serverId, c)
    const memoryMaxKb = g.memoryMb * 1024
    return {
      serverId: g.serverId,
      at: now,
      state: STATES[g.powerState] ?? 'pending',
      vcpus: g.vcpus,
      cpuNs: c.cpuNs,
      uptimeS: c.runningSince === null ? 0 : Math.floor((now - c.runningSince) / 1000),
      memoryMaxKb,
      memoryUsedKb: running ? Math.round(memoryMaxKb * LOAD.memoryShare) : 0,
      disks: [{ name: 'vda', rdBytes: c.rdBytes, wrBytes: c.wrBytes, rdReqs: Math.floor(c.rdBytes / LOAD.requestBytes), wrReqs: Math.floor(c.wrBytes / LOAD.requestBytes), errors: 0 }],
      nics: g.macs.map((mac, i) => {
        // The guest's traffic is split over its NICs in order: the first carries it all in the usual one-NIC case.
        const share = i === 0 ? 1 : 0
        const rx = c.rxBytes * share
        const tx = c.txBytes * share
        return { mac, rxBytes: rx, txBytes: tx, rxPackets: Math.floor(rx / LOAD.packetBytes), txPackets: Math.floor(tx / LOAD.packetBytes), rxErrors: 0, txErrors: 0, rxDrop: 0, txDrop: 0 }
      }),
    }
  }
}

/**
 * A simulated host's own sample: its CPU is busy with its guests' CPU time (in jiffies of 100 a second, as
 * /proc/stat counts), its memory used is its guests', its disk holds their disks' bytes written.
 */
export function simulatedHostSample(guests: GuestSample[], cpus: number, memoryMb: number, startedAt: number, now = Date.now()): HostSample {
  const jiffies = (ns: number) => Math.round(ns / 1e7)
  return {
    at: now,
    cpuBusy: jiffies(guests.reduce((t, g) => t + g.cpuNs, 0)),
    cpuTotal: Math.round(((now - startedAt) / 1000) * 100 * cpus),
    cpus,
    memoryTotalKb: memoryMb * 1024,
    memoryUsedKb: guests.reduce((t, g) => t + g.memoryUsedKb, 0),
    diskUsedBytes: guests.reduce((t, g) => t + g.disks.reduce((d, x) => d + x.wrBytes, 0), 0),
    diskTotalBytes: 0,
    guests: guests.length,
    accelerator: 'simulated',
  }
}
