/**
 * What the native cloud commands share: the session from the resolved credentials, the output flags that
 * openstackclient's commands take (-f, -c, --long …), and rendering.
 */
import { Session } from '../../../client/session.js'
import type { CliContext } from '../../context.js'
import { resolveCredentials } from '../../config/credentials.js'
import { LIST_FORMATS, SHOW_FORMATS, renderList, renderShow, type Cell } from '../../output/format.js'
import type { FlagSpec, FlagValues } from '../../spec.js'

export const LIST_OUTPUT_FLAGS: FlagSpec[] = [
  { name: 'format', short: 'f', type: 'string', help: `output format: ${LIST_FORMATS.join(', ')}`, default: 'table', placeholder: '<format>' },
  { name: 'column', short: 'c', type: 'string', help: 'column to show (repeat with commas: -c ID,Name)', placeholder: '<column>' },
]
export const SHOW_OUTPUT_FLAGS: FlagSpec[] = [
  { name: 'format', short: 'f', type: 'string', help: `output format: ${SHOW_FORMATS.join(', ')}`, default: 'table', placeholder: '<format>' },
  { name: 'column', short: 'c', type: 'string', help: 'field to show (repeat with commas)', placeholder: '<column>' },
]

export async function withSession<T>(context: CliContext, use: (session: Session) => Promise<T>): Promise<T> {
  const credentials = resolveCredentials(context.env, context.configDir, { insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined })
  const session = Session.create(credentials.auth, credentials.transport)
  try {
    return await use(session)
  } finally {
    await session.transport.close()
  }
}

function columns(flags: FlagValues): string[] | undefined {
  const c = flags.column as string | undefined
  return c ? c.split(',').map((s) => s.trim()).filter(Boolean) : undefined
}

export function printList(context: CliContext, flags: FlagValues, headers: string[], rows: Cell[][]): number {
  context.stdout.write(renderList(headers, rows, { format: flags.format as string, columns: columns(flags) }))
  return 0
}

export function printShow(context: CliContext, flags: FlagValues, fields: [string, Cell][]): number {
  context.stdout.write(renderShow(fields, { format: flags.format as string, columns: columns(flags) }))
  return 0
}

/** Query string from defined values only. */
export function query(params: Record<string, string | number | boolean | undefined>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== false && v !== '') as [string, string | number | boolean][]
  return entries.length ? '?' + new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)])).toString() : ''
}
