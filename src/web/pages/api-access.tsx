/**
 * Settings → API Access: the public endpoints of the catalog, and credentials for command-line clients — the
 * OpenStack RC file and clouds.yaml for the current project (as Horizon makes them), and the `pcctl config set`
 * line.
 */
import { baseUrl } from '../api/http'
import { session, type Session } from '../api/session'
import { CopyBlock, Table, download } from '../ui/components'

interface Endpoint {
  service: string
  url: string
  region: string
}

export function publicEndpoints(s: Session): Endpoint[] {
  return s.catalog
    .flatMap((entry) => entry.endpoints.filter((e) => e.interface === 'public').map((e) => ({ service: entry.type, url: e.url, region: e.region })))
    .sort((a, b) => a.service.localeCompare(b.service))
}

/** The identity endpoint clients should use: the catalog's public one, else this page's base. */
function authUrl(s: Session): { url: string; region: string } {
  const identity = publicEndpoints(s).find((e) => e.service === 'identity')
  return identity ? { url: identity.url, region: identity.region } : { url: `${baseUrl()}/identity/v3`, region: 'RegionOne' }
}

/** A value inside double quotes in bash (Horizon's shellfilter: backslash, backtick, $, ! and " escaped). */
export function shellQuote(value: string): string {
  return `"${value.replace(/([\\`$!"])/g, '\\$1')}"`
}

/** Horizon's openrc.sh.template; the password prompt is skipped when OS_PASSWORD is already set (the spec's rule 1). */
export function openrc(s: Session): string {
  const { url, region } = authUrl(s)
  return `#!/usr/bin/env bash
# To use an OpenStack cloud you need to authenticate against the Identity
# service named keystone, which returns a **Token** and **Service Catalog**.
# The catalog contains the endpoints for all services the user/tenant has
# access to - such as Compute, Image Service, Identity, Object Storage, Block
# Storage, and Networking (code-named nova, glance, keystone, swift,
# cinder, and neutron).
export OS_AUTH_URL=${shellQuote(url)}
# With the addition of Keystone we have standardized on the term **project**
# as the entity that owns the resources.
export OS_PROJECT_ID=${shellQuote(s.project.id)}
export OS_PROJECT_NAME=${shellQuote(s.project.name)}
export OS_USER_DOMAIN_NAME=${shellQuote(s.user.domain.name)}
if [ -z "$OS_USER_DOMAIN_NAME" ]; then unset OS_USER_DOMAIN_NAME; fi
export OS_PROJECT_DOMAIN_ID=${shellQuote(s.project.domain.id)}
if [ -z "$OS_PROJECT_DOMAIN_ID" ]; then unset OS_PROJECT_DOMAIN_ID; fi
# unset v2.0 items in case set
unset OS_TENANT_ID
unset OS_TENANT_NAME
# In addition to the owning entity (tenant), OpenStack stores the entity
# performing the action as the **user**.
export OS_USERNAME=${shellQuote(s.user.name)}
# With Keystone you pass the keystone password. Set OS_PASSWORD before
# sourcing this file to skip the question.
if [ -z "$OS_PASSWORD" ]; then
  echo "Please enter your OpenStack Password for project $OS_PROJECT_NAME as user $OS_USERNAME: "
  read -sr OS_PASSWORD_INPUT
  export OS_PASSWORD=$OS_PASSWORD_INPUT
fi
# If your configuration has multiple regions, we set that information here.
# OS_REGION_NAME is optional and only valid in certain environments.
export OS_REGION_NAME=${shellQuote(region)}
# Don't leave a blank variable, unset it if it was empty
if [ -z "$OS_REGION_NAME" ]; then unset OS_REGION_NAME; fi
export OS_INTERFACE=public
export OS_IDENTITY_API_VERSION=3
`
}

/** YAML double-quoted scalar. */
const yamlQuote = (value: string) => JSON.stringify(value)

/** Horizon's clouds.yaml.template: one cloud named `openstack`, no password. */
export function cloudsYaml(s: Session): string {
  const { url, region } = authUrl(s)
  return `# This is a clouds.yaml file, which can be used by OpenStack tools as a source
# of configuration on how to connect to a cloud. If this is your only cloud,
# just put this file in ~/.config/openstack/clouds.yaml and tools like
# python-openstackclient will just work with no further config. (You will need
# to add your password to the auth section)
# If you have more than one cloud account, add the cloud entry to the clouds
# section of your existing file and you can refer to them by name with
# OS_CLOUD=openstack or --os-cloud=openstack
clouds:
  openstack:
    auth:
      auth_url: ${url}
      username: ${yamlQuote(s.user.name)}
      project_id: ${s.project.id}
      project_name: ${yamlQuote(s.project.name)}
      user_domain_name: ${yamlQuote(s.user.domain.name)}
    region_name: ${yamlQuote(region)}
    interface: "public"
    identity_api_version: 3
`
}

/** The control plane's URL for pcctl: the identity endpoint without its /identity/v3 path. */
export function accountUrl(s: Session): string {
  return authUrl(s).url.replace(/\/identity(\/v3)?\/?$/, '')
}

/** A word for a POSIX shell command line, quoted only when it needs to be. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`
}

/** Puts pcctl on PATH from this control plane (install.sh verifies the bundle's checksum; README, docs/cli.md). */
export function pcctlInstallLine(s: Session): string {
  return `curl -fsSL ${shellWord(`${accountUrl(s)}/downloads/install.sh`)} | sudo bash`
}

export function pcctlConfigLine(s: Session): string {
  const { region } = authUrl(s)
  return `pcctl config set --account-url ${shellWord(accountUrl(s))} --username ${shellWord(s.user.name)} --region ${shellWord(region)} --tenant ${shellWord(s.project.name)}`
}

export function ApiAccessPage() {
  const s = session()!
  return (
    <section>
      <h1>API Access</h1>
      <p>
        Use these with the <code>openstack</code> command-line client, openstacksdk, Terraform or <code>pcctl</code>. They are for project <strong>{s.project.name}</strong> as user{' '}
        <strong>{s.user.name}</strong>; switch project first to get another project’s files.
      </p>
      <div class="toolbar">
        <button type="button" class="primary" onClick={() => download(`${s.project.name}-openrc.sh`, openrc(s), 'text/plain')}>
          Download OpenStack RC file
        </button>
        <button type="button" onClick={() => download('clouds.yaml', cloudsYaml(s), 'text/yaml')}>
          Download clouds.yaml
        </button>
      </div>
      <h2>pcctl</h2>
      <p>
        Not on this machine yet? Install it from this control plane (as <code>/usr/local/bin/pcctl</code>; without root, put{' '}
        <code>PCCTL_PREFIX=$HOME/.local</code> before <code>bash</code> instead of <code>sudo</code>):
      </p>
      <CopyBlock label="pcctl install command" text={pcctlInstallLine(s)} />
      <p>Saves this account for pcctl (it asks for the password):</p>
      <CopyBlock label="pcctl config set command" text={pcctlConfigLine(s)} />
      <h2>Credentials</h2>
      <dl class="facts">
        <dt>User name</dt>
        <dd>{s.user.name}</dd>
        <dt>User ID</dt>
        <dd>{s.user.id}</dd>
        <dt>User domain</dt>
        <dd>{s.user.domain.name}</dd>
        <dt>Project name</dt>
        <dd>{s.project.name}</dd>
        <dt>Project ID</dt>
        <dd>{s.project.id}</dd>
        <dt>Authentication URL</dt>
        <dd>{authUrl(s).url}</dd>
      </dl>
      <h2>API endpoints</h2>
      <Table
        rows={publicEndpoints(s)}
        rowKey={(e) => `${e.service}:${e.url}`}
        empty="The token carries no catalog."
        columns={[
          { label: 'Service', value: (e) => e.service.replace(/-/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase()) },
          { label: 'Service endpoint', value: (e) => e.url },
          { label: 'Region', value: (e) => e.region },
        ]}
      />
    </section>
  )
}
