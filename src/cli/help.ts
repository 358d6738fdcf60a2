/** Help text generated from the command table, so it always lists every command and flag. */
import { GLOBAL_FLAGS, type CommandSpec, type FlagSpec } from './spec.js'

function flagLine(flag: FlagSpec): string {
  const names = `${flag.short ? `-${flag.short}, ` : '    '}--${flag.name}${flag.placeholder ? ` ${flag.placeholder}` : ''}`
  return `  ${names.padEnd(36)} ${flag.help}${flag.default !== undefined && flag.default !== false ? ` (default ${flag.default})` : ''}`
}

export function mainHelp(commands: CommandSpec[]): string {
  const lines = commands.map((c) => `  ${c.words.join(' ').padEnd(26)} ${c.deprecated ? '(deprecated) ' : ''}${c.summary}`)
  return [
    'pcctl: onboard hosts to a pcc private cloud and run cloud commands',
    '',
    'Usage:',
    '  pcctl [command] [flags]',
    '',
    'Commands:',
    ...lines,
    `  ${'<openstack command>'.padEnd(26)} any command of the standard cloud client, e.g. pcctl volume list, pcctl network list`,
    '',
    'Global flags:',
    ...GLOBAL_FLAGS.map(flagLine),
    '',
    'Use "pcctl [command] --help" for more about a command.',
    '',
  ].join('\n')
}

export function commandHelp(command: CommandSpec): string {
  return [
    `${command.summary}${command.deprecated ? `\n\nDeprecated: ${command.deprecated}` : ''}`,
    '',
    'Usage:',
    `  pcctl ${command.words.join(' ')}${command.positionals?.length ? ' ' + command.positionals.map((p) => `<${p}>`).join(' ') : ''}${command.variadic ? ' [...]' : ''} [flags]`,
    '',
    'Flags:',
    ...command.flags.map(flagLine),
    flagLine({ name: 'help', short: 'h', type: 'boolean', help: `help for ${command.words.join(' ')}` }),
    '',
    'Global flags:',
    ...GLOBAL_FLAGS.filter((f) => f.name !== 'help').map(flagLine),
    '',
  ].join('\n')
}
