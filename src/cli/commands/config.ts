/** `pcctl config set` and `pcctl config get`: the saved account that onboarding and cloud commands use. */
import { Session } from '../../client/session.js'
import { ApiError, UnreachableError } from '../../client/transport.js'
import type { CliContext } from '../context.js'
import type { CommandSpec, FlagValues } from '../spec.js'
import { CONFIG_DEFAULTS, configPath, readConfig, sealPassword, writeConfig, type CliConfig } from '../config/store.js'
import { renderShow } from '../output/format.js'

export class CliFailure extends Error {
  override name = 'CliFailure'
}

async function value(context: CliContext, flags: FlagValues, flag: string, question: string, fallback?: string, secret = false): Promise<string | undefined> {
  const given = flags[flag]
  if (typeof given === 'string' && given !== '') return given
  if (context.global['no-prompt']) return fallback
  const answer = await context.prompt(`${question}${fallback ? ` [${fallback}]` : ''}: `, { secret })
  return answer.trim() === '' ? fallback : answer.trim()
}

/** Logs in with the settings to prove them, as Platform9's CLI does before saving. */
async function verify(context: CliContext, config: Omit<CliConfig, 'password'> & { password: string }, mfa: string | undefined): Promise<void> {
  const session = Session.create(
    {
      authUrl: `${config.accountUrl}/identity/v3`,
      username: config.username,
      password: config.password,
      userDomain: 'Default',
      projectName: config.tenant,
      projectDomain: 'Default',
      region: config.region,
      passcode: mfa,
    },
    { proxyUrl: config.proxyUrl, insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined },
  )
  try {
    const token = await session.login()
    const regions = new Set(token.catalog?.flatMap((e) => e.endpoints.map((p) => p.region_id ?? p.region)) ?? [])
    if (!regions.has(config.region)) throw new CliFailure(`Invalid Region: ${config.region} is not in the catalog (known: ${[...regions].join(', ') || 'none'})`)
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 400)) {
      throw new CliFailure(`Invalid Credentials${mfa ? '' : ' (if this account uses multi-factor authentication, pass --mfa <code>)'}`)
    }
    if (err instanceof CliFailure) throw err
    if (err instanceof UnreachableError) {
      throw new CliFailure(`${err.message}. Check --account-url and --proxy-url; for a self-signed certificate use --os-cacert <ca file> or --insecure`)
    }
    throw new CliFailure(`${config.accountUrl} did not answer as a pcc control plane (${(err as Error).message}): check --account-url`)
  } finally {
    await session.transport.close()
  }
}

export const configSet: CommandSpec = {
  words: ['config', 'set'],
  summary: 'store the account settings later commands use',
  flags: [
    { name: 'account-url', short: 'u', type: 'string', help: 'URL of the control plane, e.g. https://cloud.example.com', placeholder: '<string>' },
    { name: 'password', short: 'p', type: 'string', help: 'password of the account', placeholder: '<string>' },
    { name: 'region', short: 'r', type: 'string', help: `region (default ${CONFIG_DEFAULTS.region})`, placeholder: '<string>' },
    { name: 'tenant', short: 't', type: 'string', help: `project name or id (default ${CONFIG_DEFAULTS.tenant})`, placeholder: '<string>' },
    { name: 'username', short: 'e', type: 'string', help: 'user name (an e-mail form is fine)', placeholder: '<string>' },
    { name: 'proxy-url', short: 'l', type: 'string', help: 'http(s) proxy URL for every request', placeholder: '<string>' },
    { name: 'private-package-repo', type: 'string', help: 'registry URL for dependencies (air-gapped installs)', placeholder: '<string>' },
    { name: 'mfa', type: 'string', help: 'current TOTP code, when the account uses multi-factor authentication', placeholder: '<token>' },
  ],
  async run(context, flags) {
    const previous = readConfig(context.configDir)
    const accountUrl = await value(context, flags, 'account-url', 'Account URL', previous?.accountUrl)
    const username = await value(context, flags, 'username', 'Username', previous?.username)
    const password = await value(context, flags, 'password', 'Password', undefined, true)
    const region = (await value(context, flags, 'region', 'Region', previous?.region ?? CONFIG_DEFAULTS.region))!
    const tenant = (await value(context, flags, 'tenant', 'Tenant', previous?.tenant ?? CONFIG_DEFAULTS.tenant))!
    const missing = [!accountUrl && '--account-url', !username && '--username', !password && '--password'].filter(Boolean)
    if (missing.length) throw new CliFailure(`missing ${missing.join(', ')} (given --no-prompt, every required value must be a flag)`)
    let url: URL
    try {
      url = new URL(accountUrl!)
    } catch {
      throw new CliFailure(`--account-url ${accountUrl} is not a URL; use the form https://cloud.example.com`)
    }
    const proxyUrl = (flags['proxy-url'] as string | undefined) ?? previous?.proxyUrl
    const config = {
      accountUrl: url.toString().replace(/\/+$/, ''),
      username: username!,
      password: password!,
      region,
      tenant,
      ...(proxyUrl ? { proxyUrl } : {}),
      ...(flags['private-package-repo'] ? { privatePackageRepo: flags['private-package-repo'] as string } : previous?.privatePackageRepo ? { privatePackageRepo: previous.privatePackageRepo } : {}),
      ...(context.global.insecure ? { insecure: true } : {}),
    }
    context.stderr.write(`Checking the account at ${config.accountUrl} …\n`)
    await verify(context, config, flags.mfa as string | undefined)
    writeConfig(context.configDir, { ...config, password: sealPassword(context.configDir, config.password) })
    context.log('info', 'config saved', { accountUrl: config.accountUrl, username: config.username, region, tenant })
    context.stdout.write(`Configuration saved to ${configPath(context.configDir)}\n`)
    return 0
  },
}

export const configGet: CommandSpec = {
  words: ['config', 'get'],
  summary: 'show the current settings (never the password)',
  flags: [],
  async run(context) {
    const config = readConfig(context.configDir)
    if (!config) throw new CliFailure('no configuration yet: run `pcctl config set`')
    context.stdout.write(
      renderShow([
        ['account_url', config.accountUrl],
        ['username', config.username],
        ['password', config.password ? '(saved, hidden)' : '(not set)'],
        ['region', config.region],
        ['tenant', config.tenant],
        ['proxy_url', config.proxyUrl ?? ''],
        ['private_package_repo', config.privatePackageRepo ?? ''],
      ]),
    )
    return 0
  },
}
