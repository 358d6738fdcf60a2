/**
 * `pcctl prep-node`, run on the host being onboarded: checks the host, configures the package repository,
 * installs the pcc agent from the control plane (checksum verified), registers the host with a one-time token
 * and starts the agent service. Re-running it on an onboarded host changes nothing and says so.
 */
import { createHash } from 'node:crypto'
import type { HostView } from '../../../client/resmgr.js'
import { Transport } from '../../../client/transport.js'
import type { CliContext } from '../../context.js'
import { Host } from '../../host/host.js'
import { osRelease, preflight } from '../../onboarding/preflight.js'
import { readConfig } from '../../config/store.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import { AGENT_BINARY, AGENT_CONFIG_FILE, AGENT_SERVICE, MFA_FLAG, connect, hostId, waitFor } from './common.js'

const REGISTRATION_TIMEOUT_MS = 120_000

/** Ubuntu's cloud archive for the release's codename: where hypervisor packages come from. */
function cloudArchiveLine(host: Host): string | undefined {
  const os = osRelease(host)
  if (os.ID !== 'ubuntu' || !os.VERSION_CODENAME) return undefined
  return `deb http://ubuntu-cloud.archive.canonical.com/ubuntu ${os.VERSION_CODENAME}-updates/caracal main`
}

/** A private repository needs --skip-repo-config (spec rule 4); checked before anything is changed. */
function checkRepositoryFlags(skip: boolean, privateRepo: string | undefined): void {
  if (privateRepo && !skip) {
    throw new CliFailure('a private package repository is configured: run prep-node with --skip-repo-config (and make sure no unreachable apt sources remain, rule 4)')
  }
}

function configureRepositories(context: CliContext, host: Host, skip: boolean, privateRepo: string | undefined): void {
  if (privateRepo) {
    host.write('/etc/apt/sources.list.d/pcc-private.list', `deb ${privateRepo} ./\n`)
    context.stderr.write(`✓ package repository: ${privateRepo} (private; trust its CA certificate yourself if it is self-signed)\n`)
    return
  }
  if (skip) {
    context.stderr.write('- package repository: left as it is (--skip-repo-config)\n')
    return
  }
  const line = cloudArchiveLine(host)
  if (line) host.write('/etc/apt/sources.list.d/pcc-cloud-archive.list', line + '\n')
  context.stderr.write(`✓ package repository: ${line ? 'Ubuntu cloud archive configured' : 'distribution repositories'}\n`)
}

async function downloadAgent(context: CliContext, base: string, host: Host): Promise<void> {
  const transport = new Transport({ insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined, proxyUrl: readConfig(context.configDir)?.proxyUrl, timeoutMs: 60_000 })
  try {
    const binary = (await transport.request('GET', `${base}/downloads/pcc-agent`, { headers: { accept: 'application/octet-stream' } })).text
    const published = (await transport.request('GET', `${base}/downloads/pcc-agent.sha256`, { headers: { accept: 'text/plain' } })).text.split(/\s+/)[0]
    const actual = createHash('sha256').update(binary).digest('hex')
    if (!published || published !== actual) throw new CliFailure(`the agent download does not match its published checksum (${published || 'none'} ≠ ${actual}): nothing was installed`)
    host.write(AGENT_BINARY, binary, 0o755)
  } finally {
    await transport.close()
  }
}

/** The agent's settings for a first registration: the control plane, this host's id and a one-time token. */
function writeAgentConfig(context: CliContext, host: Host, base: string, id: string, token: string): void {
  const agentConfig = { controller: base, host_id: id, registration_token: token, driver: 'simulated', ...(context.global.insecure ? { insecure: true } : {}), ...(context.global['os-cacert'] ? { ca_file: context.global['os-cacert'] } : {}) }
  host.write(AGENT_CONFIG_FILE, JSON.stringify(agentConfig, null, 2) + '\n', 0o600)
}

function startAgent(context: CliContext, host: Host): void {
  host.startService(AGENT_SERVICE, [process.execPath, host.path(AGENT_BINARY), '--root', host.root])
  context.stderr.write('✓ agent service started\n')
}

/** The agent writes its host credential into agent.json once the control plane accepted the registration. */
function registeredCredential(host: Host): string | undefined {
  try {
    return (JSON.parse(host.readText(AGENT_CONFIG_FILE) ?? '{}') as { credential?: string }).credential
  } catch {
    return undefined
  }
}

/**
 * With a registration token an administrator created (web console, Admin → Onboarding, or the resource manager
 * API), the host needs no account: the agent registers with the token, and the host is done once it holds its
 * credential. The control plane's URL comes from --account-url or the saved account.
 */
async function prepWithToken(context: CliContext, host: Host, token: string, accountUrl: string | undefined, skipRepo: boolean, privateRepo: string | undefined): Promise<number> {
  const base = (accountUrl ?? readConfig(context.configDir)?.accountUrl)?.replace(/\/+$/, '')
  if (!base) throw new CliFailure('--registration-token needs the control plane URL: add --account-url <url> (or save an account with `pcctl config set`)')
  configureRepositories(context, host, skipRepo, privateRepo)
  const id = hostId(host, true)!
  if (registeredCredential(host) && host.serviceRunning(AGENT_SERVICE)) {
    context.stdout.write(`Host ${id} is already onboarded and its agent is running; nothing to do.\n`)
    return 0
  }
  context.stderr.write('… installing the pcc agent\n')
  await downloadAgent(context, base, host)
  context.stderr.write(`✓ agent installed at ${AGENT_BINARY} (checksum verified)\n`)
  if (!registeredCredential(host)) writeAgentConfig(context, host, base, id, token)
  startAgent(context, host)
  await waitFor(context, 'the host to register', REGISTRATION_TIMEOUT_MS, async () => {
    if (registeredCredential(host)) return { done: true }
    if (!host.serviceRunning(AGENT_SERVICE)) throw new CliFailure('the agent stopped before registering: see /var/log/pcc/agent.log')
    return { status: 'waiting for the agent to register (a used or expired token is refused: create a new one)' }
  })
  context.stdout.write(`Host ${host.hostname()} is registered with id ${id}. An administrator assigns its roles (web console, Admin → Hosts).\n`)
  return 0
}

export const prepNode: CommandSpec = {
  words: ['prep-node'],
  summary: 'prepare this host for onboarding: checks, package repository, agent installation, registration',
  flags: [
    { name: 'skip-repo-config', type: 'boolean', default: false, help: 'do not configure the distribution cloud-archive repository (required with --private-package-repo)' },
    MFA_FLAG,
    { name: 'registration-token', type: 'string', help: 'one-time token from an administrator (web console, Admin → Onboarding): registers without logging in', placeholder: '<token>' },
    { name: 'account-url', type: 'string', help: 'URL of the control plane, with --registration-token when no account is saved', placeholder: '<string>' },
  ],
  async run(context, flags) {
    const host = Host.fromEnv(context.env)
    context.stderr.write(`Preparing ${host.hostname()} for onboarding\n`)
    const checks = preflight(host)
    for (const c of checks) context.stderr.write(`${c.ok ? '✓' : c.required ? '✗' : '!'} ${c.name}: ${c.detail}\n`)
    const failed = checks.filter((c) => !c.ok && c.required)
    if (failed.length) throw new CliFailure(`${failed.length} required check(s) failed: ${failed.map((c) => c.name).join(', ')}. Fix them and run prep-node again`)

    const skipRepo = Boolean(flags['skip-repo-config'])
    const privateRepo = readConfig(context.configDir)?.privatePackageRepo
    checkRepositoryFlags(skipRepo, privateRepo)
    const registrationToken = flags['registration-token'] as string | undefined
    if (registrationToken) return prepWithToken(context, host, registrationToken, flags['account-url'] as string | undefined, skipRepo, privateRepo)
    // Log in before writing anything: a refused login (a missing or wrong --mfa code) must leave the host as it was.
    const api = await connect(context, flags.mfa as string | undefined)
    try {
      configureRepositories(context, host, skipRepo, privateRepo)
      const id = hostId(host, true)!
      const known = await api.resmgr.host(id)
      if (known && host.serviceRunning(AGENT_SERVICE)) {
        context.stdout.write(`Host ${id} is already onboarded and its agent is running; nothing to do.\n`)
        return 0
      }
      context.stderr.write('… installing the pcc agent\n')
      await downloadAgent(context, api.base, host)
      context.stderr.write(`✓ agent installed at ${AGENT_BINARY} (checksum verified)\n`)
      if (!known) writeAgentConfig(context, host, api.base, id, (await api.resmgr.createRegistrationToken()).token)
      startAgent(context, host)
      const registered = await waitFor<HostView>(context, 'the host to register', REGISTRATION_TIMEOUT_MS, async () => {
        const view = await api.resmgr.host(id)
        return view?.info.responding ? { done: view } : { status: view ? 'registered, waiting for its first heartbeat' : 'waiting for the agent to register' }
      })
      context.stdout.write(`Host ${registered.info.hostname} is onboarded with id ${id}. Assign roles with \`pcctl authorize-node --role hypervisor\` or through the resource manager.\n`)
      return 0
    } finally {
      await api.close()
    }
  },
}
