/**
 * Parses pcctl's command line against the command table: global flags anywhere, the longest matching command
 * path, then that command's flags. Anything unknown is a UsageError (exit code 2) that names the nearest match.
 */
import { GLOBAL_FLAGS, type CommandSpec, type FlagSpec, type FlagValues } from './spec.js'

export class UsageError extends Error {
  override name = 'UsageError'
}

export interface Parsed {
  command?: CommandSpec
  /** Words that named no pcctl command (a passthrough to the openstack client, or a mistake). */
  rest: string[]
  flags: FlagValues
  global: FlagValues
  positionals: string[]
}

/** Levenshtein distance, for "did you mean". */
export function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1))
      previous = current
    }
  }
  return row[b.length]
}

export function nearest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = distance(word, candidate)
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined
}

function findFlag(specs: FlagSpec[], arg: string): FlagSpec | undefined {
  if (arg.startsWith('--')) return specs.find((f) => f.name === arg.slice(2))
  return specs.find((f) => f.short !== undefined && f.short === arg.slice(1))
}

/** Splits `--name=value` and reads flags of `specs` from args; returns what is left. */
function takeFlags(args: string[], specs: FlagSpec[], into: FlagValues, strict: boolean, context: string): string[] {
  const left: string[] = []
  for (let i = 0; i < args.length; i++) {
    const raw = args[i]
    if (raw === '--') {
      left.push(...args.slice(i))
      break
    }
    if (!raw.startsWith('-') || raw === '-') {
      left.push(raw)
      continue
    }
    const eq = raw.indexOf('=')
    const name = eq > 0 ? raw.slice(0, eq) : raw
    const spec = findFlag(specs, name)
    if (!spec) {
      if (strict) {
        const guess = nearest(name.replace(/^-+/, ''), specs.map((f) => f.name))
        throw new UsageError(`unknown flag ${name} for ${context}${guess ? ` (did you mean --${guess}?)` : ''}`)
      }
      left.push(raw)
      continue
    }
    if (spec.type === 'boolean') {
      into[spec.name] = eq > 0 ? raw.slice(eq + 1) !== 'false' : true
      continue
    }
    const value = eq > 0 ? raw.slice(eq + 1) : args[++i]
    if (value === undefined) throw new UsageError(`flag --${spec.name} needs a value`)
    const previous = into[spec.name]
    into[spec.name] = spec.repeatable ? [...(Array.isArray(previous) ? previous : []), value] : value
  }
  return left
}

export function parse(argv: string[], commands: CommandSpec[]): Parsed {
  const global: FlagValues = {}
  const withoutGlobal = takeFlags(argv, GLOBAL_FLAGS, global, false, 'pcctl')
  const words = withoutGlobal.filter((a) => !a.startsWith('-'))
  // Longest command whose words begin the positional words.
  const command = [...commands]
    .sort((a, b) => b.words.length - a.words.length)
    .find((c) => c.words.every((w, i) => words[i] === w))
  if (!command) return { rest: withoutGlobal, flags: {}, global, positionals: [] }

  let remaining = [...withoutGlobal]
  for (const word of command.words) remaining.splice(remaining.indexOf(word), 1)
  const flags: FlagValues = {}
  remaining = takeFlags(remaining, command.flags, flags, true, `'${command.words.join(' ')}'`)
  const allowed = command.variadic ? Infinity : (command.positionals?.length ?? 0)
  if (remaining.length > allowed) throw new UsageError(`unexpected argument ${remaining[allowed]} for '${command.words.join(' ')}'`)
  for (const spec of command.flags) if (flags[spec.name] === undefined && spec.default !== undefined) flags[spec.name] = spec.default
  return { command, rest: [], flags, global, positionals: remaining }
}
