/**
 * Runs one pcctl invocation against a context: parse, help, dispatch to a command or to the openstack client,
 * and turn failures into a message and an exit code (2 for usage mistakes, 1 for everything else).
 */
import type { CliContext } from './context.js'
import { COMMANDS } from './commands/index.js'
import { CliFailure } from './commands/config.js'
import { OPENSTACK_GROUPS, runOpenstack } from './commands/passthrough.js'
import { commandHelp, mainHelp } from './help.js'
import { nearest, parse, UsageError } from './parse.js'
import { VERSION } from './version.js'

export async function runCli(argv: string[], context: Omit<CliContext, 'global'>): Promise<number> {
  const full: CliContext = { ...context, global: {} }
  try {
    const parsed = parse(argv, COMMANDS)
    full.global = parsed.global
    if (parsed.global.version) {
      context.stdout.write(`pcctl ${VERSION}\n`)
      return 0
    }
    if (!parsed.command) {
      const words = parsed.rest.filter((w) => !w.startsWith('-'))
      if (words.length === 0) {
        context.stdout.write(mainHelp(COMMANDS))
        return parsed.global.help ? 0 : 2
      }
      if (OPENSTACK_GROUPS.includes(words[0])) return await runOpenstack(full, parsed.rest)
      const known = [...new Set([...COMMANDS.map((c) => c.words[0]), ...OPENSTACK_GROUPS])]
      const guess = nearest(words[0], known)
      throw new UsageError(`unknown command "${words[0]}" for "pcctl"${guess ? `\n\nDid you mean this?\n\t${guess}` : ''}`)
    }
    if (parsed.global.help) {
      context.stdout.write(commandHelp(parsed.command))
      return 0
    }
    if (parsed.command.deprecated) context.stderr.write(`Warning: ${parsed.command.words.join(' ')} is deprecated: ${parsed.command.deprecated}\n`)
    full.log('debug', 'running', { command: parsed.command.words.join(' ') })
    return await parsed.command.run(full, parsed.flags, parsed.positionals)
  } catch (err) {
    if (err instanceof UsageError) {
      context.stderr.write(`Error: ${err.message}\nRun 'pcctl --help' for usage.\n`)
      return 2
    }
    const message = err instanceof CliFailure ? err.message : (err as Error).message
    full.log('error', message)
    context.stderr.write(`Error: ${message}\n`)
    if (full.global.verbose && !(err instanceof CliFailure)) context.stderr.write(`${(err as Error).stack}\n`)
    return 1
  }
}
