/**
 * openstackclient's column formatters, for the native network, identity and host commands: tables show
 * Python's str() of a value (None, True, ['a'], {'k': 'v'}) unless the column has one of osc's formatters
 * (ListColumn, DictColumn, UP/DOWN …); json and yaml show the value itself. Commands describe their columns
 * and fields as tables of this module's `Column`s, so the output follows openstack's without ifs per field.
 */
import { pyRepr, pyStr, rich, type Cell } from '../../output/format.js'
import { UsageError } from '../../parse.js'

type Json = unknown

/** A cell turns a field's value into what tables show and what json shows. */
export type Formatter = (value: Json) => Cell

/** No formatter: the value itself; lists and dicts print as Python prints them (format.ts does the rest). */
export const plain: Formatter = (value) => (value !== null && typeof value === 'object' ? rich(pyRepr(value), value) : ((value ?? null) as Cell))

/** osc_lib's format_list: sorted, joined with ', '. */
export const listColumn: Formatter = (value) => rich(Array.isArray(value) ? [...value].map(String).sort().join(', ') : pyStr(value), value ?? null)

/** osc_lib's format_dict: key='value' sorted by key, nested dicts flattened with dots. */
export function formatDict(data: Record<string, Json>, prefix?: string): string {
  return Object.keys(data)
    .sort()
    .map((key) => {
      const name = prefix ? `${prefix}.${key}` : key
      const v = data[key]
      if (v && typeof v === 'object' && !Array.isArray(v)) return formatDict(v as Record<string, Json>, name)
      return v === null || v === undefined ? `${name}=` : `${name}='${pyStr(v)}'`
    })
    .join(', ')
}

/** DictColumn: format_dict for tables; json shows the dict ({} for none). */
export const dictColumn: Formatter = (value) => rich(value ? formatDict(value as Record<string, Json>) : 'None', value ?? {})

/** ListDictColumn: one format_dict line per item. */
export const listDictColumn: Formatter = (value) =>
  rich(Array.isArray(value) ? value.map((d) => formatDict(d as Record<string, Json>)).join('\n') : 'None', value ?? null)

export const adminStateColumn: Formatter = (value) => rich(value ? 'UP' : 'DOWN', value ?? null)
export const routerExternalColumn: Formatter = (value) => rich(value ? 'External' : 'Internal', value ?? null)

/** A column of a list, or a field of a show: its heading, where its value comes from, how it prints. */
export interface Column<T = Record<string, Json>> {
  name: string
  /** The body's key (default: the name) or a function of the whole record. */
  from?: string | ((record: T) => Json)
  format?: Formatter
  /** Value when the body has no such key (what openstacksdk's resource shows for an attribute it did not get). */
  missing?: Json
}

function valueOf<T>(column: Column<T>, record: T): Json {
  if (typeof column.from === 'function') return column.from(record)
  const key = column.from ?? column.name
  const value = (record as Record<string, Json>)[key]
  return value === undefined ? (column.missing ?? null) : value
}

export function cell<T>(column: Column<T>, record: T): Cell {
  return (column.format ?? plain)(valueOf(column, record))
}

export function headers<T>(columns: Column<T>[]): string[] {
  return columns.map((c) => c.name)
}

export function rows<T>(columns: Column<T>[], records: T[]): Cell[][] {
  return records.map((r) => columns.map((c) => cell(c, r)))
}

/** Show fields sorted by name, as osc sorts the columns of a shown resource. */
export function fields<T>(columns: Column<T>[], record: T): [string, Cell][] {
  return [...columns].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((c) => [c.name, cell(c, record)])
}

/** Fields of an identity resource: everything in the body but `links`, sorted (osc shows `_info`). */
export function bodyFields(body: Record<string, Json>): [string, Cell][] {
  return Object.keys(body)
    .filter((k) => k !== 'links')
    .sort()
    .map((k) => [k, plain(body[k])])
}

/**
 * Reads `start=A,end=B`-style values of a repeatable flag, as osc's MultiKeyValueAction does: every key must be
 * known, the required ones present; a mistake is a usage error naming the flag.
 */
export function keyValues(flag: string, text: string, known: string[], required: string[] = []): Record<string, string> {
  const pairs: Record<string, string> = {}
  for (const part of text.split(',')) {
    const eq = part.indexOf('=')
    const key = eq > 0 ? part.slice(0, eq) : part
    if (eq <= 0 || !known.includes(key)) throw new UsageError(`--${flag} ${text}: use ${known.map((k) => `${k}=<value>`).join(',')} (unknown or empty key '${key}')`)
    pairs[key] = part.slice(eq + 1)
  }
  const missing = required.filter((k) => !pairs[k])
  if (missing.length) throw new UsageError(`--${flag} ${text}: missing ${missing.join(', ')} (use ${known.map((k) => `${k}=<value>`).join(',')})`)
  return pairs
}

/** The values of a repeatable flag (none when absent). */
export function many(value: string | string[] | boolean | undefined): string[] {
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : []
}
