/** Tables of the metrics history (docs/metrics.md): the latest samples and the consolidated rings. */

/** The latest sample of a guest (`server`) or host (`host`): GuestSample or HostSample JSON. */
export interface MetricLatestTable {
  subject_id: string
  kind: 'server' | 'host'
  /** The host that sent it (for a host: itself). */
  host_id: string
  at: number
  sample: string
}

/**
 * One slot of a subject's ring in one tier (metrics/metric-history.ts, TIERS): the average of the samples that fell
 * into the step starting at `at`. A server's row fills cpu (vCPUs busy), memory (bytes), disk_* and net_* (bytes a
 * second); a host's fills cpu (CPUs busy), memory, disk_used (bytes) and guests.
 */
export interface MetricSlotTable {
  subject_id: string
  tier: number
  slot: number
  at: number
  samples: number
  cpu: number | null
  memory: number | null
  disk_read: number | null
  disk_write: number | null
  net_rx: number | null
  net_tx: number | null
  disk_used: number | null
  guests: number | null
}

export interface MetricsTables {
  metric_latest: MetricLatestTable
  metric_slots: MetricSlotTable
}
