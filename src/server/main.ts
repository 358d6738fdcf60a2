#!/usr/bin/env node
/**
 * pcc-server: reads the configuration, starts every service on one port, prints how to reach it, and shuts
 * down gracefully on SIGTERM/SIGINT. Operator mistakes end in one line on stderr and a non-zero exit.
 * `pcc-server COMMAND …` runs a local command instead (local-commands.ts: password recovery, all-in-one clean-up).
 */
import { join, resolve } from 'node:path'
import { guestsOfOtherDataDirs } from './all-in-one/cleanup.js'
import { preflight } from './all-in-one/preflight.js'
import { loadConfig, settingsHelp } from './config/load.js'
import { ConfigError, type Config } from './config/settings.js'
import { CommandError, commandsHelp, findCommand, splitArgs, type LocalCommand } from './local-commands.js'
import { createLogger, createTerminalLogger } from './logger.js'
import { startServer, StartupError, type RunningServer } from './runtime.js'
import { pcctlCommand, pcctlInstallLine, serverCommand } from './start-commands.js'

/** One line on stderr, whatever the message holds (driver errors can span several lines). */
function fail(message: string, code: number): never {
  process.stderr.write(`pcc-server: error: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`)
  process.exit(code)
}

function load(argv: string[]): Config {
  try {
    return loadConfig({ argv, env: process.env })
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2)
    throw err
  }
}

async function runCommand(command: LocalCommand, argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`Usage: ${command.usage}\n  ${command.help}\n\nSettings as for a start (pcc-server --help): --data-dir, PCC_DATABASE_URL, …\n`)
    return
  }
  try {
    const { positional, options, settings } = splitArgs(command, argv)
    await command.run({ positional, options, config: load(settings), say: (line) => process.stdout.write(`${line}\n`) })
  } catch (err) {
    if (err instanceof CommandError) fail(err.message, 2)
    throw err
  }
}

/** The all-in-one checks before anything starts: a fault ends the start (exit 2), the summary is printed. */
function allInOneChecks(config: Config): void {
  const check = preflight()
  process.stdout.write(check.summary.join('\n') + '\n')
  if (check.fault) fail(check.fault, 2)
  for (const [root, count] of guestsOfOtherDataDirs(resolve(config.dataDir, 'host'))) {
    const dataDir = root.endsWith('/host') ? root.slice(0, -'/host'.length) : root
    process.stderr.write(`pcc-server: warning: ${count} guest(s) of another data dir (${dataDir}) are running, unmanaged by this start: \`${thisServer()} cleanup --data-dir ${dataDir}\` ends them\n`)
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  const command = findCommand(argv[0])
  if (command) return runCommand(command, argv.slice(1))
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(settingsHelp() + '\n\n' + commandsHelp() + '\n')
    return
  }
  const config = load(argv)
  if (config.localHypervisor === 'qemu') allInOneChecks(config)
  const terminal = config.terminal === 'on' || (config.terminal === 'auto' && process.stdout.isTTY === true)
  const logFile = join(config.dataDir, 'log/pcc-server.log')
  const logger = terminal ? createTerminalLogger(config.logLevel, logFile) : createLogger(config.logLevel)

  // Installed before anything starts, so a signal that arrives early is never met by the default handler.
  let server: RunningServer | undefined
  let signalled: string | undefined
  const shutdown = (signal: string) => {
    // A second Ctrl-C means "now": the operator gave up waiting for the drain.
    if (signalled) {
      if (signal === 'SIGINT') process.exit(130)
      return
    }
    signalled = signal
    logger.info({ signal }, 'shutting down')
    // During start-up there is nothing to drain: every start-up write is a transaction, so stopping is safe.
    if (!server) process.exit(0)
    server.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  try {
    server = await startServer(config, logger)
  } catch (err) {
    if (err instanceof StartupError) fail(err.message, 1)
    // Not an operator mistake we know of: keep the stack in the log for a bug report, one line on stderr.
    logger.error({ err }, 'start-up failed')
    fail(`start-up failed: ${(err as Error).message}`, 1)
  }
  process.stdout.write(startSummary(config, server, terminal ? logFile : undefined).join('\n') + '\n\n')
}

/** This program as the operator types it here (`pcc-server` once installed, `node …/main.js` in a checkout). */
function thisServer(): string {
  return serverCommand(process.argv[1], process.env.PATH)
}

/** What the operator needs first: where pcc is, how to log in, how to get back in, where the log is. */
function startSummary(config: Config, server: RunningServer, logFile: string | undefined): string[] {
  const { urls } = server.deps
  const dataDirFlag = `--data-dir ${config.dataDir}`
  const pcctl = pcctlCommand(process.env.PATH)
  const pcc = thisServer()
  const lines = [
    '',
    `pcc is running at ${config.publicUrl} (listening on ${server.url}, ${server.deps.store.dialect} store, data in ${config.dataDir})`,
    `web console: ${config.publicUrl}/ (log in as admin)`,
  ]
  if (server.caFile) lines.push(`TLS: trust the generated CA certificate at ${server.caFile} (openstack --os-cacert, kubectl certificate-authority)`)
  if (server.bootstrap.generatedAdminPassword) {
    lines.push(
      'Bootstrap admin created. Its password is shown only this once:',
      '',
      `  export OS_AUTH_URL=${urls.identity}`,
      '  export OS_USERNAME=admin',
      `  export OS_PASSWORD=${server.bootstrap.generatedAdminPassword}`,
      '  export OS_PROJECT_NAME=admin OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3',
      '',
      `then: openstack server list   (or: ${pcctl.command} server list)`,
    )
  }
  if (!pcctl.onPath) lines.push(pcctlInstallLine(config.publicUrl))
  lines.push(`Lost the admin password? On this machine, with no token: ${pcc} reset-password admin ${dataDirFlag} (${pcc} unlock-user admin clears a lockout)`)
  if (logFile) lines.push(`Log (JSON): ${logFile}; warnings and errors show here too.`)
  if (config.localHypervisor === 'qemu') lines.push(`Guests outlive pcc-server. To tear this machine's all-in-one down: ${pcc} cleanup ${dataDirFlag} [--keep-guests]`)
  return lines
}

main().catch((err) => fail((err as Error).message, 1))
