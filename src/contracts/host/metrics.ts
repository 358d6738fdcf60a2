/**
 * Metrics samples: what a host measures of its guests and of itself every SAMPLE_INTERVAL_MS, and sends with its
 * heartbeat (`samples`, docs/metrics.md). Counters are cumulative since the guest's QEMU started (the control
 * plane turns two consecutive samples into rates); gauges are values of the moment. Keys are short because a
 * host sends one per guest every ten seconds.
 */

/** How often a host samples its guests and itself. */
export const SAMPLE_INTERVAL_MS = 10_000

/** One disk of a guest: cumulative bytes and requests (QMP query-blockstats). */
export interface DiskSample {
  /** The device as the guest's monitor names it (drive id). */
  name: string
  rdBytes: number
  wrBytes: number
  rdReqs: number
  wrReqs: number
  errors: number
}

/** One NIC of a guest, as the guest sees it: received is what its tap sent (the tap's tx), sent is the tap's rx. */
export interface NicSample {
  mac: string
  rxBytes: number
  txBytes: number
  rxPackets: number
  txPackets: number
  rxErrors: number
  txErrors: number
  rxDrop: number
  txDrop: number
}

/** One guest at one moment. */
export interface GuestSample {
  serverId: string
  /** Epoch ms when taken. */
  at: number
  /** running, paused, shutdown, suspended, crashed (Nova's diagnostics states). */
  state: 'running' | 'paused' | 'shutdown' | 'suspended' | 'crashed' | 'pending'
  vcpus: number
  /** Cumulative CPU time of the guest's vCPUs in nanoseconds (a fully busy vCPU adds 1e9 a second). */
  cpuNs: number
  /** Seconds since the guest's process started. */
  uptimeS: number
  memoryMaxKb: number
  /** Memory the guest uses: the process's resident set, or what the balloon reports when there is one. */
  memoryUsedKb: number
  disks: DiskSample[]
  nics: NicSample[]
}

/** The host itself at one moment. */
export interface HostSample {
  at: number
  /** Cumulative busy and total CPU jiffies of the host (/proc/stat): rates come from two samples. */
  cpuBusy: number
  cpuTotal: number
  cpus: number
  memoryTotalKb: number
  memoryUsedKb: number
  /** Bytes used and total on the file system of the agent's state directory. */
  diskUsedBytes: number
  diskTotalBytes: number
  guests: number
  /** kvm or tcg for a QEMU host; `simulated` for simulated ones. */
  accelerator: string
}

/** What a heartbeat carries when a sample is due. */
export interface HeartbeatSamples {
  host: HostSample
  guests: GuestSample[]
}
