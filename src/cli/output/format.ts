/**
 * Output in openstackclient's (cliff's) formats, so scripts written for `openstack … -f json -c ID` work with
 * pcctl unchanged. Lists: table (default), csv, json, value, yaml. Shows: table, json, value, yaml, shell.
 * A cell may carry a human form (tables) and a machine form (json, yaml), as cliff's formattable columns do; value,
 * csv and shell print Python's str() of the machine form, and plain values print as Python prints them (None, True).
 */
import { lazy } from '../lazy.js'
import { UsageError } from '../parse.js'

export interface RichCell {
  human: string
  machine: unknown
  /** A Python float: printed as Python prints it (1.0) in every text format, bare in csv, right-aligned in tables. */
  float?: true
}
export type Cell = string | number | boolean | null | RichCell

export function rich(human: string, machine: unknown): RichCell {
  return { human, machine }
}

/** A number that is a float in Python (rxtx_factor): JavaScript would print 1 where Python prints 1.0. */
export function pyFloat(value: number): RichCell {
  return { human: Number.isInteger(value) ? value.toFixed(1) : String(value), machine: value, float: true }
}

function isRich(cell: Cell): cell is RichCell {
  return typeof cell === 'object' && cell !== null && 'human' in cell
}

/** Python's repr() of a JSON value: how str() of a list or dict prints its items. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') {
    const escaped = value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t')
    return value.includes("'") && !value.includes('"') ? `"${escaped}"` : `'${escaped.replace(/'/g, "\\'")}'`
  }
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`)
    .join(', ')}}`
}

/** Python's str(): what cliff prints for a value that has no human form. */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value)
}

/** Tables show the human form. */
const human = (cell: Cell): string => (isRich(cell) ? cell.human : pyStr(cell))
/** value, csv and shell show str() of the machine form (cliff calls machine_readable() there). */
const flat = (cell: Cell): string => (isRich(cell) ? (cell.float ? cell.human : pyStr(cell.machine)) : pyStr(cell))
const machine = (cell: Cell): unknown => (isRich(cell) ? cell.machine : cell)

/** cliff's yaml.safe_dump (PyYAML): YAML 1.1 (a date-like string is quoted), keys sorted, single quotes, lists not indented. */
const YAML_OPTIONS = { version: '1.1', sortMapEntries: true, singleQuote: true, indentSeq: false } as const

/** The machine form for YAML, where a float keeps its decimal point (1.0) as PyYAML writes it. */
function yamlValue(cell: Cell): unknown {
  if (!isRich(cell) || !cell.float) return machine(cell)
  return Object.assign(new (lazy('yaml').Scalar)(cell.machine), { minFractionDigits: 1 })
}

export const LIST_FORMATS = ['table', 'csv', 'json', 'value', 'yaml'] as const
export const SHOW_FORMATS = ['table', 'json', 'value', 'yaml', 'shell'] as const

export interface OutputOptions {
  format?: string
  columns?: string[]
}

const normalise = (name: string) => name.toLowerCase().replace(/[\s_-]+/g, '_')

/** Indexes of the selected columns, in the command's order (as cliff does), or a UsageError naming the valid ones. */
function select(headers: string[], wanted: string[] | undefined): number[] {
  if (!wanted || wanted.length === 0) return headers.map((_, i) => i)
  const keys = new Set(wanted.map(normalise))
  for (const w of wanted) {
    if (!headers.some((h) => normalise(h) === normalise(w))) {
      throw new UsageError(`No recognized column names in ['${w}']. Recognized columns are ${headers.map((h) => `'${h}'`).join(', ')}`)
    }
  }
  return headers.map((h, i) => (keys.has(normalise(h)) ? i : -1)).filter((i) => i >= 0)
}

function drawTable(headers: string[], rows: string[][], alignRight: boolean[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.flatMap((r) => r[i].split('\n').map((l) => l.length))))
  const rule = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+'
  const line = (cells: string[]) => {
    const split = cells.map((c) => c.split('\n'))
    const height = Math.max(...split.map((s) => s.length))
    const out: string[] = []
    for (let k = 0; k < height; k++) {
      out.push('| ' + split.map((s, i) => (alignRight[i] ? (s[k] ?? '').padStart(widths[i]) : (s[k] ?? '').padEnd(widths[i]))).join(' | ') + ' |')
    }
    return out.join('\n')
  }
  // cliff prints an empty line for a list without rows (no --print-empty).
  if (rows.length === 0) return '\n'
  return [rule, line(headers), rule, ...rows.map(line), rule].join('\n') + '\n'
}

/** Python's csv writer with QUOTE_NONNUMERIC: numbers and booleans bare, None empty, everything else quoted. */
function csvField(cell: Cell): string {
  if (typeof cell === 'number' || typeof cell === 'boolean') return pyStr(cell)
  if (isRich(cell) && cell.float) return cell.human
  return `"${(cell === null ? '' : flat(cell)).replace(/"/g, '""')}"`
}

export function renderList(headers: string[], rows: Cell[][], options: OutputOptions = {}): string {
  const format = options.format ?? 'table'
  if (!(LIST_FORMATS as readonly string[]).includes(format)) throw new UsageError(`invalid format ${format}: choose from ${LIST_FORMATS.join(', ')}`)
  const picked = select(headers, options.columns)
  const hs = picked.map((i) => headers[i])
  const cells = rows.map((r) => picked.map((i) => r[i]))
  switch (format) {
    case 'json':
      return JSON.stringify(cells.map((r) => Object.fromEntries(r.map((c, i) => [hs[i], machine(c)]))), null, 2) + '\n'
    case 'yaml':
      return cells.length ? lazy('yaml').stringify(cells.map((r) => Object.fromEntries(r.map((c, i) => [hs[i], yamlValue(c)]))), YAML_OPTIONS) : '[]\n'
    case 'value':
      return cells.map((r) => r.map(flat).join(' ') + '\n').join('')
    case 'csv':
      return [hs.map(csvField).join(','), ...cells.map((r) => r.map(csvField).join(','))].join('\n') + '\n'
    default: {
      const align = cells.length ? cells[0].map((c) => typeof c === 'number' || (isRich(c) && c.float === true)) : []
      return drawTable(hs, cells.map((r) => r.map(human)), align)
    }
  }
}

export function renderShow(fields: [string, Cell][], options: OutputOptions & { prefix?: string } = {}): string {
  const format = options.format ?? 'table'
  if (!(SHOW_FORMATS as readonly string[]).includes(format)) throw new UsageError(`invalid format ${format}: choose from ${SHOW_FORMATS.join(', ')}`)
  const picked = select(fields.map(([name]) => name), options.columns).map((i) => fields[i])
  switch (format) {
    case 'json':
      return JSON.stringify(Object.fromEntries(picked.map(([k, v]) => [k, machine(v)])), null, 2) + '\n'
    case 'yaml':
      return lazy('yaml').stringify(Object.fromEntries(picked.map(([k, v]) => [k, yamlValue(v)])), YAML_OPTIONS)
    case 'value':
      return picked.map(([, v]) => flat(v) + '\n').join('')
    case 'shell':
      return picked.map(([k, v]) => `${options.prefix ?? ''}${k.toLowerCase().replace(/[\s:-]/g, '_')}="${flat(v).replace(/"/g, '\\"')}"\n`).join('')
    default:
      return drawTable(['Field', 'Value'], picked.map(([k, v]) => [k, human(v)]))
  }
}
