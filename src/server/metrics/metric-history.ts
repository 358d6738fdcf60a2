/**
 * The metrics history (docs/metrics.md): hosts' samples in, bounded rings out. Each sample becomes a point (rates
 * from the subject's previous sample, gauges as they are) written into one slot of each tier, like Proxmox's RRD:
 * the slot is the step's index modulo the tier's size, so a ring never grows, and a slot that comes round again
 * is overwritten rather than appended to. Samples that fall into the same step are averaged in place.
 */
import { sql } from 'kysely'
import type { GuestSample, HeartbeatSamples, HostSample } from '../../contracts/host/metrics.js'
import type { Db } from '../storage/store.js'
import type { MetricSlotTable } from '../storage/tables/metrics.js'

/** The rings: 10 s for an hour, 5 min for a week, 1 h for a year. */
export const TIERS = [
  { step: 10_000, slots: 360 },
  { step: 300_000, slots: 2016 },
  { step: 3_600_000, slots: 8760 },
] as const

/** What a metrics read covers, and from which tier. */
export const RANGES = {
  hour: { tier: 0, span: 3_600_000 },
  day: { tier: 1, span: 86_400_000 },
  week: { tier: 1, span: 604_800_000 },
  year: { tier: 2, span: 31_536_000_000 },
} as const
export type MetricRange = keyof typeof RANGES

const VALUES = ['cpu', 'memory', 'disk_read', 'disk_write', 'net_rx', 'net_tx', 'disk_used', 'guests'] as const
type Values = Pick<MetricSlotTable, (typeof VALUES)[number]>
export interface MetricPoint extends Values {
  at: number
}

const EMPTY: Values = { cpu: null, memory: null, disk_read: null, disk_write: null, net_rx: null, net_tx: null, disk_used: null, guests: null }

/** A counter's rate a second between two samples; null without a previous sample or when the counter restarted. */
function rate(now: number, before: number | undefined, seconds: number): number | null {
  if (before === undefined || seconds <= 0 || now < before) return null
  return (now - before) / seconds
}

const sum = <T>(items: T[], of: (item: T) => number) => items.reduce((total, item) => total + of(item), 0)

export function guestPoint(sample: GuestSample, previous: GuestSample | undefined): Values {
  const seconds = previous ? (sample.at - previous.at) / 1000 : 0
  const disks = (s: GuestSample | undefined, of: (d: GuestSample['disks'][number]) => number) => (s ? sum(s.disks, of) : undefined)
  const nics = (s: GuestSample | undefined, of: (n: GuestSample['nics'][number]) => number) => (s ? sum(s.nics, of) : undefined)
  const cpu = rate(sample.cpuNs, previous?.cpuNs, seconds)
  return {
    ...EMPTY,
    cpu: cpu === null ? null : cpu / 1e9,
    memory: sample.memoryUsedKb * 1024,
    disk_read: rate(disks(sample, (d) => d.rdBytes)!, disks(previous, (d) => d.rdBytes), seconds),
    disk_write: rate(disks(sample, (d) => d.wrBytes)!, disks(previous, (d) => d.wrBytes), seconds),
    net_rx: rate(nics(sample, (n) => n.rxBytes)!, nics(previous, (n) => n.rxBytes), seconds),
    net_tx: rate(nics(sample, (n) => n.txBytes)!, nics(previous, (n) => n.txBytes), seconds),
  }
}

export function hostPoint(sample: HostSample, previous: HostSample | undefined): Values {
  const total = previous && sample.cpuTotal > previous.cpuTotal ? sample.cpuTotal - previous.cpuTotal : 0
  const busy = previous ? sample.cpuBusy - previous.cpuBusy : -1
  return {
    ...EMPTY,
    cpu: total > 0 && busy >= 0 ? (busy / total) * sample.cpus : null,
    memory: sample.memoryUsedKb * 1024,
    disk_used: sample.diskUsedBytes,
    guests: sample.guests,
  }
}

/** A value averaged into its slot: a null sample keeps what the slot has; a new step starts from the sample. */
function consolidated(column: (typeof VALUES)[number]) {
  return sql<number | null>`CASE WHEN metric_slots.at <> excluded.at OR metric_slots.${sql.ref(column)} IS NULL THEN excluded.${sql.ref(column)}
    WHEN excluded.${sql.ref(column)} IS NULL THEN metric_slots.${sql.ref(column)}
    ELSE (metric_slots.${sql.ref(column)} * metric_slots.samples + excluded.${sql.ref(column)}) / (metric_slots.samples + 1) END`
}

// Bound parameters of one statement at most: SQLite allows 32,766 (PostgreSQL 65,535).
const PARAMETERS_PER_STATEMENT = 32_000

/** Writes rows a statement at a time, each under PARAMETERS_PER_STATEMENT values (a host with thousands of guests). */
async function inStatements<Row extends object>(rows: Row[], write: (slice: Row[]) => Promise<unknown>): Promise<void> {
  if (rows.length === 0) return
  const perStatement = Math.floor(PARAMETERS_PER_STATEMENT / Object.keys(rows[0]).length)
  for (let start = 0; start < rows.length; start += perStatement) await write(rows.slice(start, start + perStatement))
}

/**
 * Writes one point of each subject into every tier: a heartbeat's whole batch (its host and its guests, three rings
 * each) in one upsert, split only past a statement's parameters (a host with over 700 guests).
 */
async function writePoints(db: Db, points: { subjectId: string; at: number; values: Values }[]): Promise<void> {
  const rows = points.flatMap((p) =>
    TIERS.map(({ step, slots }, tier) => {
      const index = Math.floor(p.at / step)
      return { subject_id: p.subjectId, tier, slot: index % slots, at: index * step, samples: 1, ...p.values }
    }),
  )
  await inStatements(rows, (slice) =>
    db
      .insertInto('metric_slots')
      .values(slice)
      .onConflict((oc) =>
        oc.columns(['subject_id', 'tier', 'slot']).doUpdateSet({
          ...Object.fromEntries(VALUES.map((c) => [c, consolidated(c)])),
          samples: sql<number>`CASE WHEN metric_slots.at = excluded.at THEN metric_slots.samples + 1 ELSE 1 END`,
          at: sql<number>`excluded.at`,
        }),
      )
      .execute(),
  )
}

async function previousSamples(db: Db, ids: string[]): Promise<Map<string, unknown>> {
  if (ids.length === 0) return new Map()
  const rows = await db.selectFrom('metric_latest').select(['subject_id', 'sample']).where('subject_id', 'in', ids).execute()
  return new Map(rows.map((r) => [r.subject_id, JSON.parse(r.sample) as unknown]))
}

async function saveLatest(db: Db, rows: { subject_id: string; kind: 'server' | 'host'; host_id: string; at: number; sample: string }[]): Promise<void> {
  await inStatements(rows, (slice) =>
    db
      .insertInto('metric_latest')
      .values(slice)
      .onConflict((oc) => oc.column('subject_id').doUpdateSet({ kind: sql`excluded.kind`, host_id: sql`excluded.host_id`, at: sql`excluded.at`, sample: sql`excluded.sample` }))
      .execute(),
  )
}

/**
 * Records a host's samples. Only guests the control plane places on this host are taken: a host speaks for its
 * own guests, never another host's (a sample for any other server is dropped). Answers how many guests were taken.
 */
export async function recordSamples(db: Db, hostId: string, samples: HeartbeatSamples): Promise<number> {
  // One sample a guest (the last, should a host repeat one): an upsert may touch each row only once.
  const latest = new Map(samples.guests.map((g) => [g.serverId, g]))
  const ids = [...latest.keys()]
  const placed = ids.length === 0 ? [] : await db.selectFrom('servers').select('id').where('host_id', '=', hostId).where('deleted', '=', 0).where('id', 'in', ids).execute()
  const own = new Set(placed.map((r) => r.id))
  const guests = [...latest.values()].filter((g) => own.has(g.serverId))
  await db.transaction().execute(async (tx) => {
    const previous = await previousSamples(tx, [hostId, ...own])
    const points = [
      { subjectId: hostId, at: samples.host.at, values: hostPoint(samples.host, previous.get(hostId) as HostSample | undefined) },
      ...guests.map((g) => ({ subjectId: g.serverId, at: g.at, values: guestPoint(g, previous.get(g.serverId) as GuestSample | undefined) })),
    ]
    await writePoints(tx, points)
    await saveLatest(tx, [
      { subject_id: hostId, kind: 'host', host_id: hostId, at: samples.host.at, sample: JSON.stringify(samples.host) },
      ...guests.map((g) => ({ subject_id: g.serverId, kind: 'server' as const, host_id: hostId, at: g.at, sample: JSON.stringify(g) })),
    ])
  })
  return guests.length
}

/** The points of a subject's range, oldest first (only the slots written within the range: a ring holds older ones). */
export async function readHistory(db: Db, subjectId: string, range: MetricRange, now = Date.now()): Promise<{ step: number; points: MetricPoint[] }> {
  const { tier, span } = RANGES[range]
  const rows = await db
    .selectFrom('metric_slots')
    .select(['at', ...VALUES])
    .where('subject_id', '=', subjectId)
    .where('tier', '=', tier)
    .where('at', '>', now - span)
    .orderBy('at')
    .execute()
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))
  const points = rows.map((r) => ({ at: Number(r.at), ...(Object.fromEntries(VALUES.map((c) => [c, num(r[c])])) as unknown as Values) }))
  return { step: TIERS[tier].step, points }
}

/** A subject's latest sample, as its host sent it. */
export async function latestSample<T extends GuestSample | HostSample>(db: Db, subjectId: string): Promise<T | undefined> {
  const row = await db.selectFrom('metric_latest').select('sample').where('subject_id', '=', subjectId).executeTakeFirst()
  return row ? (JSON.parse(row.sample) as T) : undefined
}

/** Forgets a server's or host's history (a deleted server or a removed host). */
export async function deleteHistory(db: Db, subjectId: string): Promise<void> {
  await db.deleteFrom('metric_slots').where('subject_id', '=', subjectId).execute()
  await db.deleteFrom('metric_latest').where('subject_id', '=', subjectId).execute()
}
