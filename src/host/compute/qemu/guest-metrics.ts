/**
 * What the QEMU driver measures of a running guest for its metrics samples (docs/metrics.md): the QEMU process's
 * CPU time, start and resident memory from /proc, the disks' counters from QMP `query-blockstats`, the balloon's
 * size from `query-balloon` where the guest has one, and each NIC's tap counters from /sys/class/net.
 */
import { readFileSync } from 'node:fs'
import type { DiskSample, NicSample } from '../../../contracts/host/metrics.js'
import type { QmpClient } from './qmp.js'

/** Linux's USER_HZ: /proc reports CPU time in these ticks on every architecture pcc runs on. */
const TICKS_PER_SECOND = 100

export interface ProcessStats {
  cpuNs: number
  uptimeS: number
  rssKb: number
}

/** The QEMU process's CPU time (all its threads, the vCPUs among them), age and resident memory; undefined once gone. */
export function processStats(pid: number): ProcessStats | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses: the fields start after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    const startTicks = Number(fields[19])
    const bootSeconds = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0])
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return {
      cpuNs: ((utime + stime) * 1e9) / TICKS_PER_SECOND,
      uptimeS: Math.max(0, Math.floor(bootSeconds - startTicks / TICKS_PER_SECOND)),
      rssKb: rss ? Number(rss[1]) : 0,
    }
  } catch {
    return undefined
  }
}

interface BlockStats {
  device: string
  qdev?: string
  'node-name'?: string
  stats: { rd_bytes: number; wr_bytes: number; rd_operations: number; wr_operations: number; failed_rd_operations?: number; failed_wr_operations?: number }
}

/** Each block device's cumulative counters (the config drive's among them: it is a disk of the guest too). */
export async function diskStats(qmp: QmpClient): Promise<DiskSample[]> {
  const all = await qmp.execute<BlockStats[]>('query-blockstats')
  return all.map((b) => ({
    name: b.device || b.qdev || b['node-name'] || 'disk',
    rdBytes: b.stats.rd_bytes,
    wrBytes: b.stats.wr_bytes,
    rdReqs: b.stats.rd_operations,
    wrReqs: b.stats.wr_operations,
    errors: (b.stats.failed_rd_operations ?? 0) + (b.stats.failed_wr_operations ?? 0),
  }))
}

/** The guest's memory as its balloon sees it (KiB), or undefined when it has no balloon. */
export async function balloonKb(qmp: QmpClient): Promise<number | undefined> {
  try {
    const balloon = await qmp.execute<{ actual: number }>('query-balloon')
    return Math.round(balloon.actual / 1024)
  } catch {
    return undefined
  }
}

function counter(tap: string, name: string): number {
  try {
    return Number(readFileSync(`/sys/class/net/${tap}/statistics/${name}`, 'utf8').trim())
  } catch {
    return 0
  }
}

/** A NIC's counters from its tap, turned to the guest's view (what the tap transmits, the guest receives). */
export function nicStats(tap: string, mac: string): NicSample {
  return {
    mac,
    rxBytes: counter(tap, 'tx_bytes'),
    txBytes: counter(tap, 'rx_bytes'),
    rxPackets: counter(tap, 'tx_packets'),
    txPackets: counter(tap, 'rx_packets'),
    rxErrors: counter(tap, 'tx_errors'),
    txErrors: counter(tap, 'rx_errors'),
    rxDrop: counter(tap, 'tx_dropped'),
    txDrop: counter(tap, 'rx_dropped'),
  }
}
