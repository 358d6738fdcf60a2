/**
 * Admin → a host's page (its allocation against the overcommit limit and its metrics charts) and the cloud's
 * metrics overview (totals over every host, the busiest hosts and servers). Both read the same metrics APIs as
 * any client (docs/metrics.md).
 */
import { call, get } from '../../api/http'
import { hostHistory, latestValue, pointTimes, serverHistory, type HostPoint } from '../../api/metrics'
import type { Server } from '../../api/resources'
import { href, navigate } from '../../router'
import { ErrorNotice, Loading, Status, Table, formatBytes } from '../../ui/components'
import { useAsync, usePoll } from '../../ui/hooks'
import { LineChart, chartRange, formatValue } from '../../ui/line-chart'
import { HostCharts } from '../metrics-charts'
import type { HostView } from './hosts'
import { AllocationRings, TcgNotice, USAGE_VERSION, type Hypervisor } from './hypervisors'

export function HostDetailPage({ params, query }: { params: { id: string }; query: URLSearchParams }) {
  const id = params.id
  const host = useAsync((signal) => get<HostView>('resmgr', `/hosts/${encodeURIComponent(id)}`, signal), [id])
  // Not every host is a hypervisor: a storage host has no allocation, only its own metrics.
  const hypervisor = useAsync(
    async (signal) => (await call<{ hypervisor: Hypervisor }>('compute', `/os-hypervisors/${encodeURIComponent(id)}`, { signal, headers: USAGE_VERSION }).catch(() => undefined))?.body.hypervisor,
    [id],
  )
  usePoll(async () => hypervisor.reload(), 10_000)
  if (!host.data) return host.error ? <ErrorNotice error={host.error} title="Could not load the host" /> : <Loading what="the host" />
  const h = host.data
  const hv = hypervisor.data
  return (
    <section>
      <p>
        <a href={href('/admin/hypervisors')}>← Hypervisors</a>
      </p>
      <div class="page-head detail">
        <h1>{h.info.hostname}</h1>
        <Status value={h.info.responding ? 'UP' : 'DOWN'} />
      </div>
      <p class="muted">
        {h.info.os_info} {h.info.arch} · {h.info.cpu_info ? `${h.info.cpu_info.count} CPUs` : ''} · roles: {h.roles.join(', ') || 'none'}
        {hv && ` · ${hv.running_vms} servers`}
      </p>
      {hv && (
        <>
          <TcgNotice h={hv} />
          <h2>Allocation</h2>
          <AllocationRings h={hv} ratios={h.hypervisor_info ?? {}} />
        </>
      )}
      <h2>Metrics</h2>
      <HostCharts
        hostId={h.id}
        cpus={h.info.cpu_info?.count}
        memoryBytes={hv ? hv.memory_mb * 1024 * 1024 : undefined}
        range={chartRange(query.get('range'))}
        onRange={(range) => navigate(`/admin/hosts/${h.id}`, { range })}
      />
    </section>
  )
}

interface HostNow {
  host: HostView
  points: HostPoint[]
  cpu: number | null
  memory: number | null
  guests: number | null
}

// The overview asks each server's history; it looks at this many of the newest active servers, not at all.
const SERVERS_LOOKED_AT = 50
const PARALLEL = 6

/** Runs `fn` over `items`, at most `PARALLEL` at once (one page must not fire a request per server together). */
async function mapLimited<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i])
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker))
  return out
}

async function hostsNow(signal: AbortSignal): Promise<HostNow[]> {
  const hosts = await get<HostView[]>('resmgr', '/hosts', signal)
  return mapLimited(hosts, async (host) => {
    const points = (await hostHistory(host.id, 'hour', signal)).points
    return { host, points, cpu: latestValue(points, (p) => p.cpu_cpus), memory: latestValue(points, (p) => p.memory_bytes), guests: latestValue(points, (p) => p.guests) }
  })
}

async function busiestServers(signal: AbortSignal): Promise<{ server: Server; cpu: number | null; memory: number | null }[]> {
  const servers = (await get<{ servers: Server[] }>('compute', `/servers/detail?all_tenants=1&status=ACTIVE&limit=${SERVERS_LOOKED_AT}`, signal)).servers
  const rows = await mapLimited(servers, async (server) => {
    const points = (await serverHistory(server.id, 'hour', signal)).points
    return { server, cpu: latestValue(points, (p) => p.cpu_vcpus), memory: latestValue(points, (p) => p.memory_bytes) }
  })
  return rows.filter((r) => r.cpu !== null).sort((a, b) => b.cpu! - a.cpu!)
}

/** The cloud's sum of a host field at each 10 s step (the steps are aligned, so every host's points line up). */
function cloudSeries(hosts: HostNow[], of: (p: HostPoint) => number | null): { times: number[]; values: number[] } {
  const sums = new Map<number, number>()
  for (const h of hosts) {
    const times = pointTimes(h.points)
    h.points.forEach((p, i) => {
      const v = of(p)
      if (v !== null) sums.set(times[i], (sums.get(times[i]) ?? 0) + v)
    })
  }
  const times = [...sums.keys()].sort((a, b) => a - b)
  return { times, values: times.map((t) => sums.get(t)!) }
}

function CloudChart({ hosts, title, label, unit, of, floor }: { hosts: HostNow[]; title: string; label: string; unit: 'cpus' | 'bytes' | 'count'; of: (p: HostPoint) => number | null; floor?: number }) {
  const { times, values } = cloudSeries(hosts, of)
  const to = Date.now()
  return <LineChart title={title} unit={unit} times={times} series={[{ label, values }]} from={to - 3_600_000} to={to} stepMs={10_000} floor={floor} />
}

function Totals({ hosts }: { hosts: HostNow[] }) {
  const sum = (of: (h: HostNow) => number | null | undefined) => hosts.reduce((t, h) => t + (of(h) ?? 0), 0)
  const cpus = sum((h) => h.host.info.cpu_info?.count)
  const memory = sum((h) => (h.host.hypervisor_info ? h.host.hypervisor_info.memory_mb * 1024 * 1024 : 0))
  const facts: [string, string][] = [
    ['Hosts', `${hosts.length} (${hosts.filter((h) => h.host.info.responding).length} up)`],
    ['Guests running', String(sum((h) => h.guests))],
    ['CPU busy', `${formatValue('cpus', sum((h) => h.cpu))} of ${cpus}`],
    ['Memory used', `${formatBytes(sum((h) => h.memory))} of ${formatBytes(memory)} (hypervisors)`],
  ]
  return (
    <>
      <dl class="facts">
        {facts.map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </>
        ))}
      </dl>
      <div class="charts">
        <CloudChart hosts={hosts} title="CPU, all hosts" label="busy" unit="cpus" of={(p) => p.cpu_cpus} floor={cpus} />
        <CloudChart hosts={hosts} title="Memory, all hosts" label="used" unit="bytes" of={(p) => p.memory_bytes} />
        <CloudChart hosts={hosts} title="Guests, all hosts" label="guests" unit="count" of={(p) => p.guests} />
      </div>
    </>
  )
}

export function CloudMetricsPage() {
  const hosts = useAsync(hostsNow, [])
  const servers = useAsync(busiestServers, [])
  usePoll(async () => {
    hosts.reload()
    servers.reload()
  }, 10_000)
  const byCpu = [...(hosts.data ?? [])].sort((a, b) => (b.cpu ?? -1) - (a.cpu ?? -1))
  return (
    <section>
      <h1>Cloud metrics</h1>
      <p class="muted">The last hour of every host, from their 10 s samples.</p>
      <ErrorNotice error={hosts.error} title="Could not load the hosts' metrics" />
      {!hosts.data && !hosts.error && <Loading what="the hosts' metrics" />}
      {hosts.data && <Totals hosts={hosts.data} />}
      <h2>Busiest hosts</h2>
      <Table
        caption="Hosts by CPU busy now"
        rows={byCpu.slice(0, 10)}
        rowKey={(h) => h.host.id}
        empty={hosts.loading ? 'Loading…' : 'No hosts.'}
        columns={[
          { label: 'Host', value: (h) => <a href={href(`/admin/hosts/${h.host.id}`)}>{h.host.info.hostname}</a> },
          { label: 'CPU busy', value: (h) => `${formatValue('cpus', h.cpu)} of ${h.host.info.cpu_info?.count ?? '?'}` },
          { label: 'Memory used', value: (h) => formatBytes(h.memory) },
          { label: 'Guests', value: (h) => formatValue('count', h.guests) },
        ]}
      />
      <h2>Busiest servers</h2>
      <p class="muted">By CPU now, among the {SERVERS_LOOKED_AT} newest active servers of all projects.</p>
      <ErrorNotice error={servers.error} title="Could not load the servers' metrics" />
      <Table
        caption="Servers by CPU busy now"
        rows={(servers.data ?? []).slice(0, 10)}
        rowKey={(r) => r.server.id}
        empty={servers.loading ? 'Loading…' : 'No active server has samples yet.'}
        columns={[
          { label: 'Server', value: (r) => <a href={href(`/servers/${r.server.id}`, { tab: 'metrics' })}>{r.server.name}</a> },
          { label: 'Project', value: (r) => r.server.tenant_id },
          { label: 'Host', value: (r) => r.server['OS-EXT-SRV-ATTR:host'] ?? '' },
          { label: 'CPU busy', value: (r) => `${formatValue('vcpus', r.cpu)} of ${r.server.flavor.vcpus ?? '?'}` },
          { label: 'Memory used', value: (r) => formatBytes(r.memory) },
        ]}
      />
    </section>
  )
}
