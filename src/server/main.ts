#!/usr/bin/env node
/**
 * pcc-server: reads the configuration, starts every service on one port, prints how to reach it, and shuts
 * down gracefully on SIGTERM/SIGINT. Operator mistakes end in one line on stderr and a non-zero exit.
 */
import { loadConfig, settingsHelp } from './config/load.js'
import { ConfigError } from './config/settings.js'
import { createLogger } from './logger.js'
import { startServer, StartupError, type RunningServer } from './runtime.js'

/** One line on stderr, whatever the message holds (driver errors can span several lines). */
function fail(message: string, code: number): never {
  process.stderr.write(`pcc-server: error: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`)
  process.exit(code)
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(settingsHelp() + '\n')
    return
  }
  let config
  try {
    config = loadConfig({ argv, env: process.env })
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2)
    throw err
  }
  const logger = createLogger(config.logLevel)

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
  const { urls } = server.deps
  const lines = [
    '',
    `pcc is running at ${config.publicUrl} (listening on ${server.url}, ${server.deps.store.dialect} store, data in ${config.dataDir})`,
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
      'then: openstack server list   (or: pcctl server list)',
    )
  }
  process.stdout.write(lines.join('\n') + '\n\n')
}

main().catch((err) => fail((err as Error).message, 1))
