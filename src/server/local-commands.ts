/**
 * pcc-server's local commands: what an operator runs on the machine itself, with no token, on the data dir and the
 * database the settings name (the same settings as a start: `--data-dir`, `PCC_DATABASE_URL`, …) — the way
 * `keystone-manage bootstrap` recovers Keystone's admin. Access to the data dir (or the database URL) is the proof:
 * whoever has it can read every secret anyway. One row per command; `pcc-server COMMAND --help` prints its usage.
 */
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { CleanupRefused, cleanUpAllInOne } from './all-in-one/cleanup.js'
import type { Config } from './config/settings.js'
import { touchIdentity } from './identity/generation.js'
import { updateUser } from './identity/repo/users.repo.js'
import { migrate } from './storage/migrations/index.js'
import { openStore, type Store } from './storage/store.js'

/** A mistake in how the command was called or what it names: one line, exit 2 (as a configuration error). */
export class CommandError extends Error {}

interface CommandArgs {
  /** The words after the command name that are not options. */
  positional: string[]
  /** The command's own options (`--keep-guests`, `--domain NAME`). */
  options: Map<string, string | true>
  config: Config
  say(line: string): void
}

export interface LocalCommand {
  name: string
  usage: string
  help: string
  /** The command's own options: true when it takes a value. */
  options: Record<string, boolean>
  positional: number
  run(args: CommandArgs): Promise<void>
}

export const LOCAL_COMMANDS: LocalCommand[] = [
  {
    name: 'reset-password',
    usage: 'pcc-server reset-password USER [--domain DOMAIN] [--password PASSWORD] [settings]',
    help: 'sets a user\'s password (a new random one, printed, unless --password is given) and clears its lockout',
    options: { '--domain': true, '--password': true },
    positional: 1,
    run: async ({ positional, options, config, say }) => {
      const given = options.get('--password')
      if (typeof given === 'string' && given.length < 8) throw new CommandError('--password must be at least 8 characters long')
      const password = typeof given === 'string' ? given : randomBytes(18).toString('base64url')
      await withUser(config, positional[0], options, async (store, user) => {
        await store.db.transaction().execute(async (tx) => {
          await updateUser(tx, user.id, { password }, Date.now())
          await touchIdentity(tx)
        })
        say(`The password of ${user.name} (${user.id}) is reset; its lockout is cleared.`)
        if (typeof given !== 'string') say(`  new password: ${password}`)
      })
    },
  },
  {
    name: 'unlock-user',
    usage: 'pcc-server unlock-user USER [--domain DOMAIN] [settings]',
    help: 'clears a user\'s failed-login count: a user locked out by wrong passwords can log in again',
    options: { '--domain': true },
    positional: 1,
    run: async ({ positional, options, config, say }) => {
      await withUser(config, positional[0], options, async (store, user) => {
        await store.db.updateTable('users').set({ failed_auth_count: 0, failed_auth_at: null }).where('id', '=', user.id).execute()
        say(`${user.name} (${user.id}) is unlocked (${user.failed_auth_count} failed logins cleared).`)
      })
    },
  },
  {
    name: 'cleanup',
    usage: 'pcc-server cleanup [--keep-guests] [settings]',
    help: 'tears down what the all-in-one mode made on this machine for the data dir: guests, bridges, namespaces, dnsmasq, nftables tables, mounts',
    options: { '--keep-guests': false },
    positional: 0,
    run: async ({ options, config, say }) => {
      if (process.getuid?.() !== 0) throw new CommandError('cleanup removes bridges, namespaces and nftables tables and needs root: run it as root (sudo -E)')
      try {
        await cleanUpAllInOne({ dataDir: config.dataDir, keepGuests: options.has('--keep-guests'), say })
      } catch (err) {
        if (err instanceof CleanupRefused) throw new CommandError(err.message)
        throw err
      }
    },
  },
]

export function findCommand(name: string | undefined): LocalCommand | undefined {
  return LOCAL_COMMANDS.find((c) => c.name === name)
}

export function commandsHelp(): string {
  return ['Local commands (on this machine, no token; same settings as a start):', ...LOCAL_COMMANDS.map((c) => `  ${c.usage}\n      ${c.help}`)].join('\n')
}

/**
 * Splits a command's arguments: its positional words and own options, and the rest (settings flags) for the
 * configuration loader.
 */
export function splitArgs(command: LocalCommand, argv: string[]): { positional: string[]; options: Map<string, string | true>; settings: string[] } {
  const positional: string[] = []
  const options = new Map<string, string | true>()
  const settings: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.indexOf('=')
    const name = eq > 0 ? arg.slice(0, eq) : arg
    if (name in command.options) {
      if (!command.options[name]) options.set(name, true)
      else {
        const value = eq > 0 ? arg.slice(eq + 1) : argv[++i]
        if (value === undefined) throw new CommandError(`${name} needs a value (${command.usage})`)
        options.set(name, value)
      }
    } else if (arg.startsWith('-')) {
      settings.push(arg)
      if (eq < 0 && argv[i + 1] !== undefined) settings.push(argv[++i])
    } else {
      positional.push(arg)
    }
  }
  if (positional.length !== command.positional) throw new CommandError(`usage: ${command.usage}`)
  return { positional, options, settings }
}

/** Opens the store of an existing pcc (never creates one), finds the user and runs `action`. */
async function withUser(config: Config, name: string, options: Map<string, string | true>, action: (store: Store, user: { id: string; name: string; failed_auth_count: number }) => Promise<void>): Promise<void> {
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'pcc.sqlite'))) throw new CommandError(`no pcc database in ${config.dataDir} (start pcc-server once, or name the data dir with --data-dir / PCC_DATA_DIR)`)
  const store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl })
  try {
    // The same migrations a start applies: a data dir of an older version gets this version's schema first.
    await migrate(store)
    const domain = typeof options.get('--domain') === 'string' ? (options.get('--domain') as string) : 'Default'
    const dom = await store.db.selectFrom('domains').select('id').where((eb) => eb.or([eb('id', '=', domain), eb('name', '=', domain)])).executeTakeFirst()
    if (!dom) throw new CommandError(`no domain ${domain}`)
    const user = await store.db.selectFrom('users').select(['id', 'name', 'failed_auth_count']).where('domain_id', '=', dom.id).where((eb) => eb.or([eb('id', '=', name), eb('name', '=', name)])).executeTakeFirst()
    if (!user) throw new CommandError(`no user ${name} in domain ${domain}`)
    await action(store, user)
  } finally {
    await store.close()
  }
}
