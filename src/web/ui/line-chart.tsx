/**
 * A time-series line chart drawn as plain SVG (no chart library: a few axes and paths do not need 100 KB): a
 * value axis with units, a time axis for the range, one line per series broken where samples are missing, and a
 * legend. The SVG scales with its box, so the same drawing reads in Chromium and Firefox at any width.
 */
import { formatBytes } from './components'

export interface Series {
  label: string
  /** One value a time (null: no value then); the same length as the chart's `times`. */
  values: (number | null)[]
}

/** How values read: the axis picks its steps and its labels by this. */
export type ChartUnit = 'cpus' | 'vcpus' | 'bytes' | 'bytes/s' | 'count'

export interface ChartProps {
  title: string
  unit: ChartUnit
  /** Milliseconds since the epoch of each value, oldest first. */
  times: number[]
  series: Series[]
  /** The time axis: from … to (ms). */
  from: number
  to: number
  /** The data's step (ms): a longer gap between two values breaks the line. */
  stepMs: number
  /** The value axis reaches at least this (a host's CPUs, its memory), so a quiet line is not drawn full height. */
  floor?: number
}

// The drawing's own coordinates (the viewBox); CSS scales it to the box.
const W = 640
const H = 220
const PLOT = { left: 86, top: 12, right: W - 14, bottom: H - 30 }
const PLOT_W = PLOT.right - PLOT.left
const PLOT_H = PLOT.bottom - PLOT.top
const Y_TICKS = 4

/** Time axis steps by how much the chart spans: about six labels whatever the range. */
const TIME_TICKS: { upTo: number; step: number; label: (d: Date) => string }[] = [
  { upTo: 2 * 3_600_000, step: 10 * 60_000, label: (d) => hhmm(d) },
  { upTo: 2 * 86_400_000, step: 4 * 3_600_000, label: (d) => hhmm(d) },
  { upTo: 14 * 86_400_000, step: 86_400_000, label: (d) => d.toLocaleDateString('en', { weekday: 'short', day: 'numeric' }) },
  { upTo: Infinity, step: 30 * 86_400_000, label: (d) => d.toLocaleDateString('en', { month: 'short', day: 'numeric' }) },
]

function hhmm(d: Date): string {
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']

/** The scale a unit is shown in for values up to `max`: bytes in the largest power of 1024 below it. */
function scaleFor(unit: ChartUnit, max: number): { divisor: number; suffix: string } {
  if (unit === 'cpus' || unit === 'vcpus') return { divisor: 1, suffix: unit === 'cpus' ? ' CPUs' : ' vCPUs' }
  if (unit === 'count') return { divisor: 1, suffix: '' }
  let i = 0
  while (max >= 1024 ** (i + 1) && i < BYTE_UNITS.length - 1) i++
  return { divisor: 1024 ** i, suffix: ` ${BYTE_UNITS[i]}${unit === 'bytes/s' ? '/s' : ''}` }
}

/** The smallest 1, 2, 2.5 or 5 × 10ⁿ at least `x`: tick steps people read at a glance. */
export function niceStep(x: number): number {
  if (!(x > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(x))
  const m = x / power
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * power
}

/** A value with its unit, as the axis and the caption say it. */
export function formatValue(unit: ChartUnit, value: number | null | undefined): string {
  if (value === null || value === undefined) return '—'
  if (unit === 'bytes') return formatBytes(value)
  if (unit === 'bytes/s') return `${formatBytes(value)}/s`
  if (unit === 'cpus' || unit === 'vcpus') return `${value.toFixed(value < 10 ? 2 : 1)} ${unit === 'cpus' ? 'CPUs' : 'vCPUs'}`
  return value.toLocaleString('en', { maximumFractionDigits: 1 })
}

function trimNumber(n: number): string {
  return String(Number(n.toPrecision(4)))
}

/** The value axis: its top and its labelled steps, in the unit's readable scale. */
function valueAxis(unit: ChartUnit, max: number) {
  const { divisor, suffix } = scaleFor(unit, max)
  // Bytes step in powers of two (128 MiB, 16 KiB/s), as memory sizes go; other values in 1, 2, 2.5, 5 × 10ⁿ.
  const raw = max / divisor / Y_TICKS
  const step = unit === 'bytes' || unit === 'bytes/s' ? 2 ** Math.ceil(Math.log2(raw)) : niceStep(raw)
  const top = step * Y_TICKS * divisor
  const ticks = Array.from({ length: Y_TICKS + 1 }, (_, i) => ({ value: i * step * divisor, label: `${trimNumber(i * step)}${suffix}` }))
  return { top, ticks }
}

function timeAxis(from: number, to: number) {
  const spec = TIME_TICKS.find((t) => to - from <= t.upTo)!
  // Ticks fall on whole steps of local time (midnight, the full hour), not of UTC.
  const offset = -new Date(from).getTimezoneOffset() * 60_000
  const ticks: { at: number; label: string }[] = []
  for (let at = Math.ceil((from + offset) / spec.step) * spec.step - offset; at <= to; at += spec.step) ticks.push({ at, label: spec.label(new Date(at)) })
  return ticks
}

/** The path of one series: a line through its values, a new piece after each gap (a missing or late value). */
function seriesPath(times: number[], values: (number | null)[], x: (t: number) => number, y: (v: number) => number, stepMs: number): string {
  const parts: string[] = []
  let last: number | undefined
  for (const [i, v] of values.entries()) {
    if (v === null) {
      last = undefined
      continue
    }
    const point = `${x(times[i]).toFixed(1)},${y(v).toFixed(1)}`
    const joined = last !== undefined && times[i] - last <= stepMs * 1.5
    // A lone value is a zero-length piece, which the round line cap draws as a dot.
    parts.push(joined ? `L${point}` : `M${point} L${point}`)
    last = times[i]
  }
  return parts.join(' ')
}

export function LineChart({ title, unit, times, series, from, to, stepMs, floor }: ChartProps) {
  const all = series.flatMap((s) => s.values).filter((v): v is number => v !== null)
  const axis = valueAxis(unit, Math.max(floor ?? 0, ...all, unit === 'cpus' || unit === 'vcpus' ? 0.1 : unit === 'count' ? 4 : 1024))
  const x = (t: number) => PLOT.left + ((t - from) / (to - from)) * PLOT_W
  const y = (v: number) => PLOT.bottom - (Math.min(v, axis.top) / axis.top) * PLOT_H
  const latest = (s: Series) => s.values.findLast((v) => v !== null) ?? null
  const summary = series.map((s) => `${s.label} ${formatValue(unit, latest(s))}`).join(', ')
  const empty = all.length === 0
  return (
    <figure class="chart">
      <figcaption>
        <strong>{title}</strong> <span class="muted">{empty ? 'no samples yet' : `now: ${summary}`}</span>
      </figcaption>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${title}: ${empty ? 'no samples yet' : `latest ${summary}`}`}
        data-y-max={axis.top}
        data-plot={`${PLOT.left} ${PLOT.top} ${PLOT_W} ${PLOT_H}`}
      >
        {axis.ticks.map((t) => (
          <g class="tick">
            <line x1={PLOT.left} x2={PLOT.right} y1={y(t.value)} y2={y(t.value)} class={t.value === 0 ? 'axis' : 'grid'} />
            <text x={PLOT.left - 6} y={y(t.value) + 4} text-anchor="end">
              {t.label}
            </text>
          </g>
        ))}
        {timeAxis(from, to).map((t) => (
          <g class="tick">
            <line x1={x(t.at)} x2={x(t.at)} y1={PLOT.bottom} y2={PLOT.bottom + 4} class="axis" />
            <text x={x(t.at)} y={PLOT.bottom + 18} text-anchor="middle">
              {t.label}
            </text>
          </g>
        ))}
        {series.map((s, i) => (
          <path class={`series s${i}`} data-series={s.label} d={seriesPath(times, s.values, x, y, stepMs)} />
        ))}
        {empty && (
          <text x={PLOT.left + PLOT_W / 2} y={PLOT.top + PLOT_H / 2} text-anchor="middle" class="empty">
            No samples in this range yet
          </text>
        )}
      </svg>
      {series.length > 1 && (
        <ul class="legend">
          {series.map((s, i) => (
            <li class={`s${i}`}>{s.label}</li>
          ))}
        </ul>
      )}
    </figure>
  )
}

/** The ranges a chart page offers (the metrics APIs' `range`), and how far back each reaches. */
export const CHART_RANGES = [
  { id: 'hour', label: 'Hour', span: 3_600_000 },
  { id: 'day', label: 'Day', span: 86_400_000 },
  { id: 'week', label: 'Week', span: 604_800_000 },
] as const
export type ChartRange = (typeof CHART_RANGES)[number]['id']

export function chartRange(value: string | null): ChartRange {
  return CHART_RANGES.find((r) => r.id === value)?.id ?? 'hour'
}

/** The range switch: one pressed button of Hour, Day, Week. */
export function RangeSwitch({ current, onSelect }: { current: ChartRange; onSelect: (range: ChartRange) => void }) {
  return (
    <div class="range-switch" role="group" aria-label="Time range">
      {CHART_RANGES.map((r) => (
        <button type="button" aria-pressed={r.id === current} onClick={() => onSelect(r.id)}>
          {r.label}
        </button>
      ))}
    </div>
  )
}
