/** The charts of one server's or one host's metrics history, over the range the page's switch picks. */
import { hostHistory, pointTimes, serverHistory, type History } from '../api/metrics'
import { ErrorNotice, Loading } from '../ui/components'
import { useAsync, usePoll, type Async } from '../ui/hooks'
import { CHART_RANGES, LineChart, RangeSwitch, type ChartRange, type ChartUnit } from '../ui/line-chart'

/** One chart of a history: its title, unit and the fields it draws (one line each). */
interface ChartSpec<P> {
  title: string
  unit: ChartUnit
  lines: { label: string; of: (p: P) => number | null }[]
  floor?: number
}

/**
 * Samples come every 10 s; the hour's chart asks twice as often, so a new point is drawn within 5 s of its sample
 * (a guest's load shows within 25 s: its first sample wholly inside the load comes within 20 s). Longer ranges change
 * every 5 min.
 */
const REFRESH_MS: Record<ChartRange, number> = { hour: 5_000, day: 60_000, week: 300_000 }

function Charts<P extends { time: string }>({ history, range, charts }: { history: History<P>; range: ChartRange; charts: ChartSpec<P>[] }) {
  const to = Date.now()
  const from = to - CHART_RANGES.find((r) => r.id === range)!.span
  const times = pointTimes(history.points)
  return (
    <div class="charts">
      {charts.map((c) => (
        <LineChart
          title={c.title}
          unit={c.unit}
          times={times}
          from={from}
          to={to}
          stepMs={history.step_seconds * 1000}
          floor={c.floor}
          series={c.lines.map((l) => ({ label: l.label, values: history.points.map(l.of) }))}
        />
      ))}
    </div>
  )
}

function useHistory<P>(load: (signal: AbortSignal) => Promise<History<P>>, key: string, range: ChartRange): Async<History<P>> {
  const history = useAsync(load, [key, range])
  usePoll(async () => history.reload(), REFRESH_MS[range])
  return history
}

function MetricsPanel<P extends { time: string }>(props: { what: string; range: ChartRange; onRange: (r: ChartRange) => void; history: Async<History<P>>; charts: ChartSpec<P>[] }) {
  const { history, range } = props
  return (
    <section class="metrics" aria-label={`Metrics of the ${props.what}`}>
      <div class="toolbar">
        <RangeSwitch current={range} onSelect={props.onRange} />
        <span class="muted">Sampled every 10 s by the host; {range === 'hour' ? '10 s' : '5 min'} points.</span>
      </div>
      <ErrorNotice error={history.error} title="Could not load the metrics" />
      {!history.data && !history.error && <Loading what="the metrics" />}
      {history.data && history.data.range === range && <Charts history={history.data} range={range} charts={props.charts} />}
    </section>
  )
}

/** A server's CPU (vCPUs busy, against its vCPUs), memory, disk and network rates. */
export function ServerCharts({ serverId, vcpus, memoryBytes, range, onRange }: { serverId: string; vcpus?: number; memoryBytes?: number; range: ChartRange; onRange: (r: ChartRange) => void }) {
  const history = useHistory((signal) => serverHistory(serverId, range, signal), serverId, range)
  return (
    <MetricsPanel
      what="server"
      range={range}
      onRange={onRange}
      history={history}
      charts={[
        { title: 'CPU', unit: 'vcpus', floor: vcpus, lines: [{ label: 'busy', of: (p) => p.cpu_vcpus }] },
        { title: 'Memory', unit: 'bytes', floor: memoryBytes, lines: [{ label: 'used', of: (p) => p.memory_bytes }] },
        {
          title: 'Disk',
          unit: 'bytes/s',
          lines: [
            { label: 'read', of: (p) => p.disk_read_bytes_per_second },
            { label: 'write', of: (p) => p.disk_write_bytes_per_second },
          ],
        },
        {
          title: 'Network',
          unit: 'bytes/s',
          lines: [
            { label: 'in', of: (p) => p.network_rx_bytes_per_second },
            { label: 'out', of: (p) => p.network_tx_bytes_per_second },
          ],
        },
      ]}
    />
  )
}

/** A host's CPUs busy (against its CPUs), memory used (against its memory), guests and disk used. */
export function HostCharts({ hostId, cpus, memoryBytes, range, onRange }: { hostId: string; cpus?: number; memoryBytes?: number; range: ChartRange; onRange: (r: ChartRange) => void }) {
  const history = useHistory((signal) => hostHistory(hostId, range, signal), hostId, range)
  return (
    <MetricsPanel
      what="host"
      range={range}
      onRange={onRange}
      history={history}
      charts={[
        { title: 'CPU', unit: 'cpus', floor: cpus, lines: [{ label: 'busy', of: (p) => p.cpu_cpus }] },
        { title: 'Memory', unit: 'bytes', floor: memoryBytes, lines: [{ label: 'used', of: (p) => p.memory_bytes }] },
        { title: 'Guests', unit: 'count', lines: [{ label: 'guests', of: (p) => p.guests }] },
        { title: 'Disk used (state directory)', unit: 'bytes', lines: [{ label: 'used', of: (p) => p.disk_used_bytes }] },
      ]}
    />
  )
}
