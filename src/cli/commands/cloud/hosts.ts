/**
 * `pcctl host list` and `pcctl host show`: the hosts onboarded to pcc's resource manager ({base}/resmgr/v1/hosts),
 * with what an operator checks after `prep-node` and `authorize-node`: roles, their state and whether the agent
 * answers. Not `openstack host list`: that was Nova's os-hosts API, removed at compute microversion 2.43
 * (docs/cli.md says why pcctl's `host` commands are the onboarded hosts).
 */
import { ResmgrClient, type HostView } from '../../../client/resmgr.js'
import { ApiError } from '../../../client/transport.js'
import { UsageError } from '../../parse.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import { LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, printList, printShow, withSession } from './common.js'
import { dictColumn, fields, headers, listColumn, rows, type Column } from './osc.js'

/** The resource manager's host object, with the parts the typed client leaves out. */
type Host = HostView & {
  info: HostView['info'] & { os_info?: string; cpu_info?: Record<string, unknown> }
  hypervisor_info?: Record<string, unknown>
  extensions?: { ip_address?: { data?: string[] }; interfaces?: { data?: Record<string, unknown> } }
  agent_version?: string
  protocol_version?: number | null
}

const ips = (h: Host) => h.extensions?.ip_address?.data ?? []

const HOST_COLUMNS: Column<Host>[] = [
  { name: 'ID', from: (h) => h.id },
  { name: 'Hostname', from: (h) => h.info.hostname },
  { name: 'Roles', from: (h) => h.roles, format: listColumn },
  { name: 'Role Status', from: (h) => h.role_status },
  { name: 'Responding', from: (h) => h.info.responding },
  { name: 'Agent Version', from: (h) => h.agent_version ?? '' },
  { name: 'Protocol', from: (h) => h.protocol_version ?? null },
]
const HOST_LONG_COLUMNS: Column<Host>[] = [
  ...HOST_COLUMNS,
  { name: 'IP Addresses', from: ips, format: listColumn },
  { name: 'OS', from: (h) => h.info.os_info ?? '' },
  { name: 'Last Response', from: (h) => h.info.last_response_time ?? null },
  { name: 'Message', from: (h) => h.message ?? '' },
]

const HOST_FIELDS: Column<Host>[] = [
  { name: 'agent_version', from: (h) => h.agent_version ?? '' },
  { name: 'arch', from: (h) => h.info.arch ?? '' },
  { name: 'cpu_info', from: (h) => h.info.cpu_info ?? {}, format: dictColumn },
  { name: 'hostname', from: (h) => h.info.hostname },
  { name: 'hypervisor_info', from: (h) => h.hypervisor_info ?? {}, format: dictColumn },
  { name: 'id', from: (h) => h.id },
  { name: 'interfaces', from: (h) => h.extensions?.interfaces?.data ?? {}, format: dictColumn },
  { name: 'ip_addresses', from: ips, format: listColumn },
  { name: 'last_response_time', from: (h) => h.info.last_response_time ?? null },
  { name: 'message', from: (h) => h.message ?? '' },
  { name: 'os_family', from: (h) => h.info.os_family ?? '' },
  { name: 'os_info', from: (h) => h.info.os_info ?? '' },
  { name: 'protocol_version', from: (h) => h.protocol_version ?? null },
  { name: 'responding', from: (h) => h.info.responding },
  { name: 'role_status', from: (h) => h.role_status },
  { name: 'roles', from: (h) => h.roles, format: listColumn },
  { name: 'roles_status_details', from: (h) => h.roles_status_details, format: dictColumn },
]

/** By host id, then by hostname (what the operator knows), with openstack's not-found wording. */
async function findHost(resmgr: ResmgrClient, nameOrId: string): Promise<Host> {
  try {
    const byId = await resmgr.host(nameOrId)
    if (byId) return byId as Host
  } catch (err) {
    // The resource manager refuses ids that cannot be one (too long): that is a name to look up.
    if (!(err instanceof ApiError) || err.status !== 400) throw err
  }
  const matches = (await resmgr.hosts()).filter((h) => h.info.hostname === nameOrId)
  if (matches.length > 1) throw new CliFailure(`More than one host exists with the name '${nameOrId}'.`)
  if (matches.length === 0) throw new CliFailure(`No host with a name or ID of '${nameOrId}' exists.`)
  return matches[0] as Host
}

export const hostList: CommandSpec = {
  words: ['host', 'list'],
  summary: 'list the hosts onboarded to the resource manager, with their roles',
  flags: [...LIST_OUTPUT_FLAGS, { name: 'long', type: 'boolean', help: 'list additional fields in output' }],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const hosts = (await (await ResmgrClient.connect(session)).hosts()) as Host[]
      const columns = flags.long ? HOST_LONG_COLUMNS : HOST_COLUMNS
      return printList(context, flags, headers(columns), rows(columns, hosts))
    }),
}

export const hostShow: CommandSpec = {
  words: ['host', 'show'],
  summary: 'show an onboarded host by hostname or id',
  flags: SHOW_OUTPUT_FLAGS,
  positionals: ['host'],
  run: (context, flags, [nameOrId]) =>
    withSession(context, async (session) => {
      if (!nameOrId) throw new UsageError('missing argument: pcctl host show <host>')
      return printShow(context, flags, fields(HOST_FIELDS, await findHost(await ResmgrClient.connect(session), nameOrId)))
    }),
}

export const HOST_COMMANDS: CommandSpec[] = [hostList, hostShow]
