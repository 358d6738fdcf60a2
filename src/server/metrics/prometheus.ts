/**
 * Every guest and host in Prometheus's text format, appended to /metrics (docs/metrics.md, "Prometheus"): the
 * latest sample of each, labelled with the server's id, project and host, so one scrape of any pcc-server process
 * sees the whole cloud. Samples older than STALE_MS are left out: a guest that stopped being reported vanishes.
 */
import type { GuestSample, HostSample } from '../../contracts/host/metrics.js'
import type { Db } from '../storage/store.js'

const STALE_MS = 5 * 60_000

type Labels = Record<string, string>
interface Family<S> {
  name: string
  help: string
  type: 'counter' | 'gauge'
  value: (sample: S) => number
}

const GUEST: Family<GuestSample>[] = [
  { name: 'pcc_guest_up', type: 'gauge', help: 'Whether the guest runs (1) or not (0)', value: (s) => (s.state === 'running' ? 1 : 0) },
  { name: 'pcc_guest_vcpus', type: 'gauge', help: "The guest's vCPUs", value: (s) => s.vcpus },
  { name: 'pcc_guest_cpu_seconds_total', type: 'counter', help: "CPU time of the guest's vCPUs together", value: (s) => s.cpuNs / 1e9 },
  { name: 'pcc_guest_memory_max_bytes', type: 'gauge', help: "The guest's memory", value: (s) => s.memoryMaxKb * 1024 },
  { name: 'pcc_guest_memory_used_bytes', type: 'gauge', help: 'Memory the guest uses (resident, or its balloon)', value: (s) => s.memoryUsedKb * 1024 },
  { name: 'pcc_guest_disk_read_bytes_total', type: 'counter', help: 'Bytes read from all its disks', value: (s) => s.disks.reduce((t, d) => t + d.rdBytes, 0) },
  { name: 'pcc_guest_disk_write_bytes_total', type: 'counter', help: 'Bytes written to all its disks', value: (s) => s.disks.reduce((t, d) => t + d.wrBytes, 0) },
  { name: 'pcc_guest_network_receive_bytes_total', type: 'counter', help: 'Bytes received on all its NICs', value: (s) => s.nics.reduce((t, n) => t + n.rxBytes, 0) },
  { name: 'pcc_guest_network_transmit_bytes_total', type: 'counter', help: 'Bytes sent on all its NICs', value: (s) => s.nics.reduce((t, n) => t + n.txBytes, 0) },
]

const HOST: Family<HostSample>[] = [
  { name: 'pcc_host_cpus', type: 'gauge', help: "The host's CPUs", value: (s) => s.cpus },
  { name: 'pcc_host_cpu_busy_seconds_total', type: 'counter', help: 'CPU time the host spent busy, all CPUs together', value: (s) => s.cpuBusy / 100 },
  { name: 'pcc_host_cpu_seconds_total', type: 'counter', help: 'CPU time of the host, busy or idle, all CPUs together', value: (s) => s.cpuTotal / 100 },
  { name: 'pcc_host_memory_total_bytes', type: 'gauge', help: "The host's memory", value: (s) => s.memoryTotalKb * 1024 },
  { name: 'pcc_host_memory_used_bytes', type: 'gauge', help: 'Memory in use (not available)', value: (s) => s.memoryUsedKb * 1024 },
  { name: 'pcc_host_disk_used_bytes', type: 'gauge', help: "Bytes used on the file system of the agent's state", value: (s) => s.diskUsedBytes },
  { name: 'pcc_host_guests', type: 'gauge', help: 'Guests the host holds', value: (s) => s.guests },
]

const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
const labelText = (labels: Labels) => `{${Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}`

function families<S>(list: Family<S>[], subjects: { labels: Labels; sample: S }[]): string {
  return list
    .map((f) => [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...subjects.map((s) => `${f.name}${labelText(s.labels)} ${f.value(s.sample)}`)].join('\n'))
    .join('\n')
}

export async function cloudMetricsText(db: Db, now = Date.now()): Promise<string> {
  const rows = await db
    .selectFrom('metric_latest')
    .leftJoin('servers', 'servers.id', 'metric_latest.subject_id')
    .innerJoin('hosts', 'hosts.id', 'metric_latest.host_id')
    .select(['metric_latest.subject_id', 'metric_latest.kind', 'metric_latest.sample', 'servers.project_id', 'hosts.hostname'])
    .where('metric_latest.at', '>', now - STALE_MS)
    .execute()
  const guests = rows
    .filter((r) => r.kind === 'server' && r.project_id !== null)
    .map((r) => ({ labels: { server_id: r.subject_id, project_id: r.project_id!, host: r.hostname }, sample: JSON.parse(r.sample) as GuestSample }))
  const hosts = rows.filter((r) => r.kind === 'host').map((r) => ({ labels: { host_id: r.subject_id, host: r.hostname }, sample: JSON.parse(r.sample) as HostSample }))
  return `${families(GUEST, guests)}\n${families(HOST, hosts)}\n`
}
