/**
 * Nova's JsonFilter language (the `query` scheduler hint): a JSON list `[op, arg, …]` where an argument is a
 * literal, a nested expression or a `$variable` naming a host-state attribute (dotted for nested objects).
 * Operators: = < > in <= >= not or and. Semantics follow nova/scheduler/filters/json_filter.py, including
 * its quirks: comparisons hold when the first argument compares true with every other one, arguments
 * resolving to null are dropped, and a list result (from `not`) passes when any element is true.
 */
import type { HostState } from './host-state.js'

type Value = unknown

const OPERATORS = ['=', '<', '>', 'in', '<=', '>=', 'not', 'or', 'and'] as const
type Operator = (typeof OPERATORS)[number]

/** Thrown for a query that is not valid JSON or uses an unknown operator; the API answers 400 with it. */
export class JsonQueryError extends Error {
  override name = 'JsonQueryError'
}

/** Parses and checks a query string; returns the expression. */
export function parseJsonQuery(query: string): unknown[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(query)
  } catch {
    throw new JsonQueryError(`scheduler hint query is not valid JSON: ${query}`)
  }
  if (!Array.isArray(parsed)) throw new JsonQueryError('scheduler hint query must be a JSON list such as [">=", "$free_ram_mb", 1024]')
  check(parsed)
  return parsed
}

function check(expr: unknown[]): void {
  if (expr.length === 0) return
  if (!OPERATORS.includes(expr[0] as Operator)) throw new JsonQueryError(`scheduler hint query uses an unknown operator: ${JSON.stringify(expr[0])}`)
  for (const arg of expr.slice(1)) if (Array.isArray(arg)) check(arg)
}

/** The `$` variables a query can read, named as in Nova's HostState (read lazily: a query names few). */
export function queryVariable(h: HostState, name: string): Value {
  switch (name) {
    case 'host':
    case 'nodename':
    case 'hypervisor_hostname':
      return h.hostname
    case 'hypervisor_type':
      return h.hypervisorType
    case 'availability_zone':
      return h.availabilityZone
    case 'cell':
      return h.cell
    case 'host_ip':
      return h.ips[0] ?? null
    case 'free_ram_mb':
      return h.memoryMb - h.memoryMbUsed
    case 'free_disk_mb':
      return (h.diskGb - h.diskGbUsed) * 1024
    case 'total_usable_ram_mb':
      return h.memoryMb
    case 'total_usable_disk_gb':
      return h.diskGb
    case 'disk_mb_used':
      return h.diskGbUsed * 1024
    case 'vcpus_total':
      return h.vcpus
    case 'vcpus_used':
      return h.vcpusUsed
    case 'num_instances':
      return h.runningVms
    case 'cpu_allocation_ratio':
      return h.cpuRatio
    case 'ram_allocation_ratio':
      return h.ramRatio
    case 'disk_allocation_ratio':
      return h.diskRatio
    case 'capabilities':
      return { enabled: h.enabled, hypervisor_type: h.hypervisorType }
    default:
      return null
  }
}

type Compiled = (h: HostState) => Value

/** A `$variable` (dotted for nested objects) or a literal string, resolved to a getter once. */
function compileString(arg: string): Compiled | undefined {
  if (!arg) return undefined
  if (!arg.startsWith('$')) return () => arg
  const [first, ...rest] = arg.slice(1).split('.')
  return (h) => {
    let obj: Value = queryVariable(h, first)
    for (const part of rest) {
      if (obj === null || typeof obj !== 'object') return null
      obj = (obj as Record<string, Value>)[part]
      if (obj === undefined) return null
    }
    return obj
  }
}

function compare(args: Value[], op: (a: Value, b: Value) => boolean): boolean {
  if (args.length < 2) throw new JsonQueryError('a comparison needs at least two arguments')
  for (let i = 1; i < args.length; i++) if (!op(args[0], args[i])) return false
  return true
}

// Python compares numbers with numbers and strings with strings; mixed comparisons are false here.
const comparable = (a: Value, b: Value) => (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string')
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const lt = (a: Value, b: Value) => comparable(a, b) && (a as any) < (b as any)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const gt = (a: Value, b: Value) => comparable(a, b) && (a as any) > (b as any)
const eq = (a: Value, b: Value) => a === b || (typeof a === 'number' && typeof b === 'string' && String(a) === b) || (typeof a === 'string' && typeof b === 'number' && a === String(b))

const OPS: Record<Operator, (args: Value[]) => Value> = {
  '=': (args) => compare(args, eq),
  '<': (args) => compare(args, lt),
  '>': (args) => compare(args, gt),
  '<=': (args) => compare(args, (a, b) => lt(a, b) || eq(a, b)),
  '>=': (args) => compare(args, (a, b) => gt(a, b) || eq(a, b)),
  in: (args) => {
    if (args.length < 2) throw new JsonQueryError('in needs at least two arguments')
    for (let i = 1; i < args.length; i++) if (eq(args[0], args[i])) return true
    return false
  },
  not: (args) => args.map((a) => !truthy(a)),
  or: (args) => args.some(truthy),
  and: (args) => args.every(truthy),
}

/** Compiles an expression once per request into a function of the host (the scheduler runs it per host). */
export function compileJsonQuery(expr: unknown[]): Compiled {
  if (expr.length === 0) return () => true
  const op = OPS[expr[0] as Operator]
  const parts = expr.slice(1).map((raw): Compiled | undefined => (Array.isArray(raw) ? compileJsonQuery(raw) : typeof raw === 'string' ? compileString(raw) : () => raw))
  return (h) => {
    // Arguments that resolve to nothing are dropped, as Nova's _process_filter does.
    const args: Value[] = []
    for (const part of parts) {
      const v = part?.(h)
      if (v !== null && v !== undefined) args.push(v)
    }
    return op(args)
  }
}

function truthy(v: Value): boolean {
  if (Array.isArray(v)) return v.length > 0
  return Boolean(v)
}

/** True when the host passes the query (a list result passes when any element is true). */
export function hostPassesQuery(expr: unknown[] | Compiled, h: HostState): boolean {
  try {
    const result = (typeof expr === 'function' ? expr : compileJsonQuery(expr))(h)
    return Array.isArray(result) ? result.some(Boolean) : Boolean(result)
  } catch {
    return false
  }
}
