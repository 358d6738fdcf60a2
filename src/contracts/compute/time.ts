/** Nova's timestamp forms: each field uses one of these (docs/compute.md, "Representations"). */

/** `2026-01-02T03:04:05Z` — created, updated. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z'
}

/** `2026-01-02T03:04:05.000000` — launched_at, terminated_at, instance actions, key pairs. */
export function isoMicros(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined) return null
  return new Date(ms).toISOString().slice(0, 23) + '000'
}

/**
 * Parses an ISO 8601 date-time as Nova accepts in query strings (`changes-since`…): a date, optional time,
 * optional fraction, optional `Z` or offset; no offset means UTC. Undefined when it is not one.
 */
export function parseIsoTime(raw: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(raw.trim())
  if (!m) return undefined
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', tz] = m
  let offset = 'Z'
  if (tz && tz.toUpperCase() !== 'Z') offset = tz.length === 5 ? `${tz.slice(0, 3)}:${tz.slice(3)}` : tz
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${(frac + '000').slice(0, 3)}${offset}`)
  return Number.isNaN(ms) ? undefined : ms
}
