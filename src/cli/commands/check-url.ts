/**
 * `pcctl check-url`: can this host reach what onboarding needs? The control plane's endpoints (from the
 * catalog when the account works, else the account URL), the package repository in use and, without a private
 * repository, the public ones onboarding installs from. All are tried at once, each with a timeout.
 */
import { existsSync, readFileSync } from 'node:fs'
import { Session } from '../../client/session.js'
import { Transport } from '../../client/transport.js'
import type { CliContext } from '../context.js'
import type { CommandSpec } from '../spec.js'
import { resolveCredentials } from '../config/credentials.js'
import { readConfig } from '../config/store.js'
import { renderList } from '../output/format.js'

const TIMEOUT_MS = 5000

/** Public repositories a host installs from when no private repository is configured, by distribution. */
function publicRepositories(osRelease: string): string[] {
  const id = /^ID=(.*)$/m.exec(osRelease)?.[1]?.replace(/"/g, '') ?? ''
  if (id === 'ubuntu') return ['http://archive.ubuntu.com/ubuntu/', 'http://ubuntu-cloud.archive.canonical.com/ubuntu/']
  return ['http://deb.debian.org/debian/']
}

interface Check {
  what: string
  url: string
}

async function controlPlaneChecks(context: CliContext): Promise<Check[]> {
  let credentials
  try {
    credentials = resolveCredentials(context.env, context.configDir, { insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined })
  } catch {
    return []
  }
  const checks: Check[] = [{ what: 'identity', url: credentials.auth.authUrl }]
  const session = Session.create(credentials.auth, credentials.transport)
  try {
    const token = await session.login()
    for (const entry of token.catalog ?? []) {
      const endpoint = entry.endpoints.find((e) => e.interface === (credentials.auth.interface ?? 'public'))
      if (endpoint && !checks.some((c) => c.url === endpoint.url)) checks.push({ what: entry.type, url: endpoint.url })
    }
  } catch (err) {
    context.log('warn', 'check-url: login failed, checking the identity URL only', { error: (err as Error).message })
  } finally {
    await session.transport.close()
  }
  return checks
}

export const checkUrl: CommandSpec = {
  words: ['check-url'],
  summary: 'check that this host reaches the control plane and the package repositories (failures are expected when air-gapped)',
  flags: [],
  async run(context) {
    const saved = readConfig(context.configDir)
    const checks = await controlPlaneChecks(context)
    if (saved?.privatePackageRepo) checks.push({ what: 'package repository', url: saved.privatePackageRepo })
    else {
      const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : ''
      for (const url of publicRepositories(osRelease)) checks.push({ what: 'public repository', url })
    }
    if (checks.length === 0) {
      context.stderr.write('nothing to check: run `pcctl config set` first\n')
      return 1
    }
    const transport = new Transport({ proxyUrl: saved?.proxyUrl, insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined, timeoutMs: TIMEOUT_MS })
    context.stderr.write(`Checking ${checks.length} URLs …\n`)
    const results = await Promise.all(
      checks.map(async (check) => {
        const started = performance.now()
        let result: string
        let ok = false
        try {
          const response = await transport.request('GET', check.url, { timeoutMs: TIMEOUT_MS })
          ;[result, ok] = [`OK (HTTP ${response.status})`, true]
        } catch (err) {
          const e = err as Error & { status?: number; reason?: string }
          // Any HTTP answer below 500 proves the URL is reachable (a 401 or 404 is the server talking).
          if (e.status !== undefined && e.status < 500) [result, ok] = [`OK (HTTP ${e.status})`, true]
          else result = `FAIL (${e.status ? `HTTP ${e.status}` : (e.reason ?? e.message)})`
        }
        return { ...check, result, ok, ms: Math.round(performance.now() - started) }
      }),
    )
    await transport.close()
    context.stdout.write(renderList(['URL', 'Purpose', 'Result', 'Time (ms)'], results.map((r) => [r.url, r.what, r.result, r.ms])))
    const failed = results.filter((r) => !r.ok).length
    if (failed) {
      context.stderr.write(`${failed} of ${results.length} URLs unreachable. This is expected in air-gapped environments; there, set --private-package-repo with \`pcctl config set\`.\n`)
      return 1
    }
    context.stdout.write('All URLs reachable.\n')
    return 0
  },
}
