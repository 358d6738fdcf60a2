/**
 * Where a command's credentials come from, in this order: `OS_CLOUD` with clouds.yaml, the `OS_*` variables of
 * a sourced resource file, then the account saved by `pcctl config set`. The same settings become the `OS_*`
 * environment of the openstack client when pcctl hands a command over to it.
 */
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { lazy } from '../lazy.js'
import type { PasswordAuth } from '../../client/session.js'
import type { TransportOptions } from '../../client/transport.js'
import { openPassword, readConfig } from './store.js'

export interface Credentials {
  auth: PasswordAuth
  transport: TransportOptions
  source: 'clouds.yaml' | 'environment' | 'pcctl config'
}

interface CloudEntry {
  auth?: Record<string, string>
  region_name?: string
  interface?: string
  cacert?: string
  verify?: boolean
  insecure?: boolean
}

function cloudsFile(env: NodeJS.ProcessEnv): string | undefined {
  if (env.OS_CLIENT_CONFIG_FILE) return env.OS_CLIENT_CONFIG_FILE
  const home = env.HOME || homedir()
  const candidates = ['clouds.yaml', 'clouds.yml'].flatMap((n) => [join(process.cwd(), n), join(home, '.config', 'openstack', n), join('/etc/openstack', n)])
  return candidates.find((c) => existsSync(c))
}

function fromCloudsYaml(env: NodeJS.ProcessEnv): Credentials | undefined {
  if (!env.OS_CLOUD) return undefined
  const file = cloudsFile(env)
  if (!file) throw new Error(`OS_CLOUD=${env.OS_CLOUD} is set but no clouds.yaml was found`)
  const clouds = (lazy('yaml').parse(readFileSync(file, 'utf8')) as { clouds?: Record<string, CloudEntry> })?.clouds ?? {}
  const cloud = clouds[env.OS_CLOUD]
  if (!cloud?.auth) throw new Error(`cloud ${env.OS_CLOUD} is not in ${file}`)
  const a = cloud.auth
  return {
    source: 'clouds.yaml',
    auth: {
      authUrl: a.auth_url,
      username: a.username,
      password: a.password,
      userDomain: a.user_domain_name ?? a.user_domain_id,
      projectName: a.project_name,
      projectId: a.project_id,
      projectDomain: a.project_domain_name ?? a.project_domain_id,
      region: env.OS_REGION_NAME ?? cloud.region_name,
      interface: (cloud.interface as PasswordAuth['interface']) ?? 'public',
    },
    transport: { caFile: cloud.cacert, insecure: cloud.insecure === true || cloud.verify === false },
  }
}

function fromEnvironment(env: NodeJS.ProcessEnv): Credentials | undefined {
  if (!env.OS_AUTH_URL) return undefined
  if (!env.OS_USERNAME || !env.OS_PASSWORD) throw new Error('OS_AUTH_URL is set but OS_USERNAME or OS_PASSWORD is missing')
  return {
    source: 'environment',
    auth: {
      authUrl: env.OS_AUTH_URL,
      username: env.OS_USERNAME,
      password: env.OS_PASSWORD,
      userDomain: env.OS_USER_DOMAIN_NAME ?? env.OS_USER_DOMAIN_ID,
      projectName: env.OS_PROJECT_NAME ?? env.OS_TENANT_NAME,
      projectId: env.OS_PROJECT_ID,
      projectDomain: env.OS_PROJECT_DOMAIN_NAME ?? env.OS_PROJECT_DOMAIN_ID,
      region: env.OS_REGION_NAME,
      interface: (env.OS_INTERFACE as PasswordAuth['interface']) ?? 'public',
    },
    transport: { caFile: env.OS_CACERT, insecure: /^(1|true|yes)$/i.test(env.OS_INSECURE ?? '') },
  }
}

function fromSavedConfig(configDir: string): Credentials | undefined {
  const saved = readConfig(configDir)
  if (!saved) return undefined
  return {
    source: 'pcctl config',
    auth: {
      authUrl: `${saved.accountUrl.replace(/\/+$/, '')}/identity/v3`,
      username: saved.username,
      password: openPassword(configDir, saved.password),
      userDomain: 'Default',
      projectName: saved.tenant,
      projectDomain: 'Default',
      region: saved.region,
      interface: 'public',
    },
    transport: { proxyUrl: saved.proxyUrl, insecure: saved.insecure },
  }
}

/** The credentials to use, with --insecure / --os-cacert applied on top; throws telling the user what to set up. */
export function resolveCredentials(env: NodeJS.ProcessEnv, configDir: string, flags: { insecure?: boolean; caFile?: string }): Credentials {
  const found = fromCloudsYaml(env) ?? fromEnvironment(env) ?? fromSavedConfig(configDir)
  if (!found) throw new Error('no credentials: run `pcctl config set`, or source an OpenStack RC file (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, …)')
  if (flags.insecure) found.transport.insecure = true
  if (flags.caFile) found.transport.caFile = flags.caFile
  return found
}

/** The OS_* environment the openstack client needs for the same account. */
export function openstackEnvironment(credentials: Credentials): Record<string, string> {
  const a = credentials.auth
  const env: Record<string, string> = { OS_AUTH_URL: a.authUrl, OS_USERNAME: a.username, OS_PASSWORD: a.password, OS_IDENTITY_API_VERSION: '3', OS_INTERFACE: a.interface ?? 'public' }
  if (a.userDomain) env.OS_USER_DOMAIN_NAME = a.userDomain
  if (a.projectId) env.OS_PROJECT_ID = a.projectId
  if (a.projectName) env.OS_PROJECT_NAME = a.projectName
  if (a.projectDomain) env.OS_PROJECT_DOMAIN_NAME = a.projectDomain
  if (a.region) env.OS_REGION_NAME = a.region
  if (credentials.transport.caFile) env.OS_CACERT = credentials.transport.caFile
  if (credentials.transport.insecure) env.OS_INSECURE = 'true'
  if (credentials.transport.proxyUrl) {
    env.HTTPS_PROXY = credentials.transport.proxyUrl
    env.HTTP_PROXY = credentials.transport.proxyUrl
  }
  return env
}
