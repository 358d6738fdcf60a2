/**
 * What the native cloud commands share: the session from the resolved credentials, the output flags that
 * openstackclient's commands take (-f, -c, --long …), rendering, name-or-id lookups with openstack's messages,
 * deleting several resources as openstack does, and waiting for a resource with progress on stderr.
 */
import { join } from 'node:path'
import { Session } from '../../../client/session.js'
import { fileTokenCache, type TokenCache } from '../../../client/token-cache.js'
import { ApiError } from '../../../client/transport.js'
import type { CliContext } from '../../context.js'
import { resolveCredentials } from '../../config/credentials.js'
import { LIST_FORMATS, SHOW_FORMATS, renderList, renderShow, type Cell } from '../../output/format.js'
import { UsageError } from '../../parse.js'
import type { FlagSpec, FlagValues } from '../../spec.js'
import { CliFailure } from '../config.js'

export const LIST_OUTPUT_FLAGS: FlagSpec[] = [
  { name: 'format', short: 'f', type: 'string', help: `output format: ${LIST_FORMATS.join(', ')}`, default: 'table', placeholder: '<format>' },
  { name: 'column', short: 'c', type: 'string', repeatable: true, help: 'column to show (repeat for several, or -c ID,Name)', placeholder: '<column>' },
]
export const SHOW_OUTPUT_FLAGS: FlagSpec[] = [
  { name: 'format', short: 'f', type: 'string', help: `output format: ${SHOW_FORMATS.join(', ')}`, default: 'table', placeholder: '<format>' },
  { name: 'column', short: 'c', type: 'string', repeatable: true, help: 'field to show (repeat for several, or -c id,name)', placeholder: '<column>' },
]
export const LONG_FLAG: FlagSpec = { name: 'long', type: 'boolean', help: 'list additional fields in output' }

export async function withSession<T>(context: CliContext, use: (session: Session) => Promise<T>): Promise<T> {
  const credentials = resolveCredentials(context.env, context.configDir, { insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined })
  const session = Session.create(credentials.auth, credentials.transport, tokenCache(context))
  try {
    return await use(session)
  } finally {
    await session.transport.close()
  }
}

/** Tokens reused between runs (kubectl keeps its own the same way); PCCTL_TOKEN_CACHE=off logs in every time. */
function tokenCache(context: CliContext): TokenCache | undefined {
  return context.env.PCCTL_TOKEN_CACHE === 'off' ? undefined : fileTokenCache(join(context.configDir, 'tokens'))
}

function columns(flags: FlagValues): string[] | undefined {
  const c = flags.column
  const given = Array.isArray(c) ? c : typeof c === 'string' ? [c] : []
  const names = given.flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean)
  return names.length ? names : undefined
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

// ---------------------------------------------------------------------------------------------------------------
// flag values

/** A flag's integer value; argparse's message for anything else (a usage mistake, exit code 2). */
export function intFlag(flags: FlagValues, name: string): number | undefined {
  const raw = flags[name]
  if (raw === undefined || typeof raw === 'boolean') return undefined
  const text = Array.isArray(raw) ? raw[raw.length - 1] : raw
  if (!/^[-+]?\d+$/.test(text.trim())) throw new UsageError(`argument --${name}: invalid int value: '${text}'`)
  return Number(text)
}

/** A string flag given at most once (the last one wins, as argparse does) or undefined. */
export function stringFlag(flags: FlagValues, name: string): string | undefined {
  const raw = flags[name]
  if (Array.isArray(raw)) return raw[raw.length - 1]
  return typeof raw === 'string' ? raw : undefined
}

/** Every value of a repeatable flag (none when absent). */
export function listFlag(flags: FlagValues, name: string): string[] {
  const raw = flags[name]
  return Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []
}

/** `--property k=v` (repeatable) as osc's KeyValueAction reads it. */
export function keyValueFlag(flags: FlagValues, name: string): Record<string, string> | undefined {
  const given = listFlag(flags, name)
  if (given.length === 0) return undefined
  const pairs: Record<string, string> = {}
  for (const item of given) {
    const eq = item.indexOf('=')
    if (eq < 0) throw new UsageError(`argument --${name}: Expected 'key=value' type, but got: ${item}`)
    if (eq === 0) throw new UsageError(`argument --${name}: Property key must be specified: ${item}`)
    pairs[item.slice(0, eq)] = item.slice(eq + 1)
  }
  return pairs
}

/** The one value among flags that exclude each other (argparse's mutually exclusive group), or undefined. */
export function oneOf(flags: FlagValues, names: string[]): string | undefined {
  const given = names.filter((n) => flags[n] !== undefined && flags[n] !== false)
  if (given.length > 1) throw new UsageError(`argument --${given[1]}: not allowed with argument --${given[0]}`)
  return given[0]
}

/** argparse's `choices`: the value must be one of them. */
export function choiceFlag(flags: FlagValues, name: string, choices: string[]): string | undefined {
  const value = stringFlag(flags, name)
  if (value !== undefined && !choices.includes(value)) throw new UsageError(`argument --${name}: invalid choice: '${value}' (choose from ${choices.map((c) => `'${c}'`).join(', ')})`)
  return value
}

/** The positional arguments a command needs, or argparse's message naming the first one missing. */
export function required(positionals: string[], names: string[]): void {
  const missing = names.slice(positionals.length)
  if (missing.length) throw new UsageError(`the following arguments are required: ${missing.map((n) => `<${n}>`).join(', ')}`)
}

// ---------------------------------------------------------------------------------------------------------------
// name-or-id lookups

/**
 * How openstack names a resource kind when a lookup fails. osc_lib's find_resource (servers, volumes, flavors
 * in server commands) says "No server with a name or ID of 'x' exists."; openstacksdk's find (flavor, image,
 * keypair and network commands) says "No Flavor found for x".
 */
export interface Wording {
  notFound(nameOrId: string): string
  duplicate(nameOrId: string): string
}

export const oscWording = (noun: string): Wording => ({
  notFound: (x) => `No ${noun} with a name or ID of '${x}' exists.`,
  duplicate: (x) => `More than one ${noun} exists with the name '${x}'.`,
})

export const sdkWording = (className: string): Wording => ({
  notFound: (x) => `No ${className} found for ${x}`,
  duplicate: (x) => `More than one ${className} exists with the name '${x}'.`,
})

export interface Lookup<T> {
  wording: Wording
  /** GET of one resource by id, and the resource in its body. */
  byId(id: string): string
  one(body: unknown): T
  /** GET of a list narrowed to the name (the server may match more: the exact match is made here), and its items. */
  byName(name: string): string
  many(body: unknown): T[]
  /** Whether an item of the list is the one asked for (default: its name is exactly it; openstacksdk also takes the id). */
  matches?(item: T, nameOrId: string): boolean
  headers?: Record<string, string>
}

export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404
}

/** By id first (a clean 404 moves on), then by exact name in the filtered list, as openstackclient finds resources. */
export async function findResource<T extends { name?: unknown }>(session: Session, lookup: Lookup<T>, nameOrId: string): Promise<T> {
  try {
    return lookup.one(await session.get(lookup.byId(encodeURIComponent(nameOrId)), lookup.headers))
  } catch (err) {
    if (!isNotFound(err)) throw err
  }
  const matches = lookup.matches ?? ((item: T, x: string) => item.name === x)
  const found = lookup.many(await session.get(lookup.byName(nameOrId), lookup.headers)).filter((item) => matches(item, nameOrId))
  if (found.length === 0) throw new CliFailure(lookup.wording.notFound(nameOrId))
  if (found.length > 1) throw new CliFailure(lookup.wording.duplicate(nameOrId))
  return found[0]
}

/** A Neutron resource by id or name (openstacksdk's find_network, find_port, find_security_group). */
export async function findNeutron(session: Session, path: string, key: string, className: string, nameOrId: string): Promise<{ id: string; name?: string }> {
  const api = `${await session.endpoint('network')}/v2.0`
  return findResource<{ id: string; name?: string }>(session, {
    wording: sdkWording(className),
    byId: (id) => `${api}/${path}/${id}`,
    one: (body) => (body as Record<string, { id: string; name?: string }>)[key],
    byName: (name) => `${api}/${path}${query({ name })}`,
    many: (body) => (body as Record<string, { id: string; name?: string }[]>)[`${key}s`],
    matches: (item, x) => item.id === x || item.name === x,
  }, nameOrId)
}

// ---------------------------------------------------------------------------------------------------------------
// several at once

/**
 * Deletes each named resource in turn; a failure is reported and the others are still deleted, then the command
 * fails with the count (openstack's "1 of 2 volumes failed to delete."). `stopAtFirst` is `server delete`'s way:
 * the first failure ends the command.
 */
export async function deleteEach(
  context: CliContext,
  names: string[],
  remove: (nameOrId: string) => Promise<void>,
  messages: { failed(nameOrId: string, reason: string): string; summary(failed: number, total: number): string },
): Promise<number> {
  let failed = 0
  for (const name of names) {
    try {
      await remove(name)
    } catch (err) {
      failed++
      context.stderr.write(`${messages.failed(name, (err as Error).message)}\n`)
    }
  }
  if (failed) throw new CliFailure(messages.summary(failed, names.length))
  return 0
}

// ---------------------------------------------------------------------------------------------------------------
// waiting

/** How often a waiting command polls. openstack polls every 5 s; a second's tenth is cheap for the API. */
export const POLL_MS = 500

/** What a waiting command shows of a resource: its status, task and progress. */
export interface Watched {
  status?: unknown
  'OS-EXT-STS:task_state'?: unknown
  progress?: unknown
}

/**
 * Prints on stderr each step a resource takes while a command waits for it: its status and task as they change
 * ("Status: BUILD (spawning)"), and openstack's "Progress: N" when the progress moves. Nova keeps a building
 * server's progress at 0, so the status is what shows a long wait moving; stdout stays the command's answer.
 */
export function progressPrinter(context: CliContext): (resource: Watched) => void {
  let lastStep = ''
  let lastProgress: unknown
  return (resource) => {
    const task = resource['OS-EXT-STS:task_state']
    const step = resource.status ? `${String(resource.status)}${task ? ` (${String(task)})` : ''}` : ''
    if (step && step !== lastStep) context.stderr.write(`Status: ${step}\n`)
    if (resource.progress && resource.progress !== lastProgress) context.stderr.write(`Progress: ${String(resource.progress)}\n`)
    lastStep = step
    lastProgress = resource.progress
  }
}

/**
 * Polls until `settled` says the resource is done (true), failed (a message) or not yet (false); returns the last
 * resource. Its steps are printed as it moves (progressPrinter).
 */
export async function waitUntil<T extends Watched>(context: CliContext, poll: () => Promise<T>, settled: (resource: T) => boolean | string): Promise<T> {
  const progress = progressPrinter(context)
  for (;;) {
    const resource = await poll()
    progress(resource)
    const state = settled(resource)
    if (typeof state === 'string') throw new CliFailure(state)
    if (state) return resource
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

/** Polls until the resource answers 404 (deleted); fails when `failed` finds it in an error state. */
export async function waitUntilGone<T extends Watched>(context: CliContext, poll: () => Promise<T>, failed: (resource: T) => string | undefined): Promise<void> {
  const progress = progressPrinter(context)
  for (;;) {
    let resource: T
    try {
      resource = await poll()
    } catch (err) {
      if (isNotFound(err)) return
      throw err
    }
    progress(resource)
    const message = failed(resource)
    if (message) throw new CliFailure(message)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}
