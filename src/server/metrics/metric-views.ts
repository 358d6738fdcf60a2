/** The metrics history as the APIs answer it (docs/metrics.md, "APIs"): units in the field names. */
import { isoSeconds } from '../../contracts/compute/time.js'
import { RANGES, type MetricPoint, type MetricRange } from './metric-history.js'

export const RANGE_NAMES = Object.keys(RANGES) as MetricRange[]

export function isRange(value: unknown): value is MetricRange {
  return typeof value === 'string' && Object.hasOwn(RANGES, value)
}

export function serverPointView(p: MetricPoint) {
  return {
    time: isoSeconds(p.at),
    cpu_vcpus: p.cpu,
    memory_bytes: p.memory,
    disk_read_bytes_per_second: p.disk_read,
    disk_write_bytes_per_second: p.disk_write,
    network_rx_bytes_per_second: p.net_rx,
    network_tx_bytes_per_second: p.net_tx,
  }
}

export function hostPointView(p: MetricPoint) {
  return { time: isoSeconds(p.at), cpu_cpus: p.cpu, memory_bytes: p.memory, disk_used_bytes: p.disk_used, guests: p.guests }
}

const num = { type: ['number', 'null'] }
const point = (fields: string[]) => ({ type: 'object', properties: { time: { type: 'string' }, ...Object.fromEntries(fields.map((f) => [f, num])) }, required: ['time', ...fields] })

/** The answer's schema for /openapi.json: `key` holds the range, its step and its points. */
export function metricsSchema(key: string, fields: string[]) {
  return {
    type: 'object',
    required: [key],
    properties: {
      [key]: {
        type: 'object',
        required: ['id', 'range', 'step_seconds', 'points'],
        properties: { id: { type: 'string' }, range: { type: 'string', enum: RANGE_NAMES }, step_seconds: { type: 'integer' }, points: { type: 'array', items: point(fields) } },
      },
    },
  }
}

export const SERVER_POINT_FIELDS = ['cpu_vcpus', 'memory_bytes', 'disk_read_bytes_per_second', 'disk_write_bytes_per_second', 'network_rx_bytes_per_second', 'network_tx_bytes_per_second']
export const HOST_POINT_FIELDS = ['cpu_cpus', 'memory_bytes', 'disk_used_bytes', 'guests']
