/** The metrics history APIs (docs/metrics.md): a server's through compute, a host's through the resource manager. */
import { get } from './http'
import type { ChartRange } from '../ui/line-chart'

export interface History<P> {
  id: string
  range: string
  step_seconds: number
  points: P[]
}

export interface ServerPoint {
  time: string
  cpu_vcpus: number | null
  memory_bytes: number | null
  disk_read_bytes_per_second: number | null
  disk_write_bytes_per_second: number | null
  network_rx_bytes_per_second: number | null
  network_tx_bytes_per_second: number | null
}

export interface HostPoint {
  time: string
  cpu_cpus: number | null
  memory_bytes: number | null
  disk_used_bytes: number | null
  guests: number | null
}

export async function serverHistory(id: string, range: ChartRange, signal?: AbortSignal): Promise<History<ServerPoint>> {
  return (await get<{ metrics: History<ServerPoint> }>('compute', `/servers/${encodeURIComponent(id)}/metrics?range=${range}`, signal)).metrics
}

export async function hostHistory(id: string, range: ChartRange, signal?: AbortSignal): Promise<History<HostPoint>> {
  return (await get<{ metrics: History<HostPoint> }>('resmgr', `/hosts/${encodeURIComponent(id)}/metrics?range=${range}`, signal)).metrics
}

/** The times of a history's points in ms (the APIs answer ISO times in UTC). */
export function pointTimes(points: { time: string }[]): number[] {
  return points.map((p) => Date.parse(/[zZ]$/.test(p.time) ? p.time : `${p.time}Z`))
}

/** The newest non-null value of a field. */
export function latestValue<P>(points: P[], of: (p: P) => number | null): number | null {
  for (let i = points.length - 1; i >= 0; i--) {
    const v = of(points[i])
    if (v !== null) return v
  }
  return null
}
