/**
 * How a pcctl command is described: its words, flags and what it runs. The table of commands
 * (commands/index.ts) is the single source for parsing, help text and the flag snapshot.
 */
import type { CliContext } from './context.js'

export interface FlagSpec {
  /** Long name without dashes, e.g. 'account-url'. */
  name: string
  short?: string
  type: 'string' | 'boolean'
  help: string
  default?: string | boolean
  /** Shown as the value placeholder in help, e.g. '<string>'. */
  placeholder?: string
  /** A string flag that may be given several times (`--dns-nameserver A --dns-nameserver B`); its value is a string[]. */
  repeatable?: boolean
}

export type FlagValues = Record<string, string | string[] | boolean | undefined>

export interface CommandSpec {
  /** The command's words, e.g. ['config', 'set']. */
  words: string[]
  summary: string
  flags: FlagSpec[]
  /** Printed as a warning every time the command runs. */
  deprecated?: string
  /** Extra positional arguments allowed (names for help), none by default. */
  positionals?: string[]
  /** The last positional may be repeated (`network delete NET1 NET2`), as openstackclient's nargs='+'. */
  variadic?: boolean
  run(context: CliContext, flags: FlagValues, positionals: string[]): Promise<number>
}

/** Flags every command accepts. */
export const GLOBAL_FLAGS: FlagSpec[] = [
  { name: 'log-dir', type: 'string', help: 'folder for the log file (default: ~/.local/state/pcctl)', placeholder: '<string>' },
  { name: 'no-prompt', type: 'boolean', help: 'never prompt; fail when a value is missing' },
  { name: 'verbose', type: 'boolean', help: 'print debug messages on stderr' },
  { name: 'insecure', type: 'boolean', help: 'do not verify the server TLS certificate (self-signed setups)' },
  { name: 'os-cacert', type: 'string', help: 'CA certificate file to verify the server with', placeholder: '<file>' },
  { name: 'help', short: 'h', type: 'boolean', help: 'show help' },
  { name: 'version', type: 'boolean', help: 'print the version of pcctl' },
]
