/**
 * os-instance_usage_audit_log: the state of Nova's periodic instance usage audit for a period (docs/compute.md,
 * "Legacy APIs"). pcc keeps usage from the servers' own rows (os-simple-tenant-usage) and runs no audit task, so
 * for every period each compute host is one that has not run it, as in a Nova with instance_usage_audit off.
 */
import type { Db } from '../storage/store.js'
import { computeHosts } from '../hosts/compute-hosts.js'

/** Nova's format of the period's bounds: `2026-10-01 00:00:00`. */
const periodTime = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ')

/** Nova's default audit period (a month): the last whole month before `before`. */
export function auditPeriod(before: number): { begin: number; end: number } {
  const d = new Date(before)
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  const begin = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1)
  return { begin, end }
}

/** Parses Nova's `before` forms (`%Y-%m-%d %H:%M:%S` with optional fraction); undefined when it is not one. */
export function parseAuditTime(raw: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?$/.exec(raw)
  if (!m) return undefined
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`)
  return Number.isNaN(ms) ? undefined : ms
}

export async function usageAuditLog(db: Db, before: number) {
  const { begin, end } = auditPeriod(before)
  const hosts = (await computeHosts(db)).map((h) => h.hostname)
  return {
    hosts_not_run: hosts,
    log: {},
    num_hosts: hosts.length,
    num_hosts_done: 0,
    num_hosts_not_run: hosts.length,
    num_hosts_running: 0,
    overall_status: `0 of ${hosts.length} hosts done. 0 errors.`,
    period_beginning: periodTime(begin),
    period_ending: periodTime(end),
    total_errors: 0,
    total_instances: 0,
  }
}
