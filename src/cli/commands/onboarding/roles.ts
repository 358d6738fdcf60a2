/** `pcctl authorize-node` (deprecated) and `pcctl deauthorize-node`: give this host roles, or take them away. */
import type { CliContext } from '../../context.js'
import type { ResmgrClient } from '../../../client/resmgr.js'
import { Host } from '../../host/host.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import { MFA_FLAG, connect, parseDuration, requireHostId, waitFor } from './common.js'

const DEFAULT_TIMEOUT = '5m'

/** Removes every role of the host and waits for the agent to converge. Shared with decommission-node. */
export async function removeAllRoles(context: CliContext, resmgr: ResmgrClient, id: string, timeoutMs: number): Promise<void> {
  const host = await resmgr.host(id)
  if (!host) throw new CliFailure(`host ${id} is not known to the resource manager: run \`pcctl prep-node\` first`)
  if (host.roles.length === 0) {
    context.stderr.write('✓ no roles to remove\n')
    return
  }
  for (const role of host.roles) {
    await resmgr.removeRole(id, role)
    context.stderr.write(`… removing role ${role}\n`)
  }
  await waitFor(context, 'the roles to be removed', timeoutMs, async () => {
    const view = await resmgr.host(id)
    if (!view || view.roles.length === 0) return { done: true }
    return { status: Object.entries(view.roles_status_details).map(([r, s]) => `${r} ${s}`).join(', ') || view.role_status }
  })
  context.stderr.write('✓ roles removed\n')
}

export const authorizeNode: CommandSpec = {
  words: ['authorize-node'],
  summary: 'assign a role to this host',
  deprecated: 'it has no replacement; assign roles through the resource manager API',
  // --mfa is not in the spec's flag list for authorize-node, but rule 7 needs it for accounts with MFA.
  flags: [{ name: 'role', type: 'string', help: 'role to assign (see GET /resmgr/v1/roles)', placeholder: '<string>' }, MFA_FLAG],
  async run(context, flags) {
    const role = flags.role as string | undefined
    if (!role) throw new CliFailure('give the role: pcctl authorize-node --role hypervisor')
    const id = requireHostId(Host.fromEnv(context.env))
    const api = await connect(context, flags.mfa as string | undefined)
    try {
      await api.resmgr.assignRole(id, role)
      context.stderr.write(`… assigning role ${role} to ${id}\n`)
      await waitFor(context, `role ${role}`, parseDuration(DEFAULT_TIMEOUT), async () => {
        const state = (await api.resmgr.host(id))?.roles_status_details[role] ?? 'unknown'
        if (state === 'ok') return { done: true }
        if (state === 'failed') throw new CliFailure(`role ${role} failed to apply on ${id}: see /var/log/pcc/agent.log on the host`)
        return { status: state }
      })
      context.stdout.write(`Role ${role} is active on host ${id}.\n`)
      return 0
    } finally {
      await api.close()
    }
  },
}

export const deauthorizeNode: CommandSpec = {
  words: ['deauthorize-node'],
  summary: 'remove the roles of this onboarded host',
  flags: [{ name: 'timeout', short: 't', type: 'string', default: DEFAULT_TIMEOUT, help: 'how long to wait for the host to converge', placeholder: '<string>' }, MFA_FLAG],
  async run(context, flags) {
    const timeoutMs = parseDuration(flags.timeout as string)
    const id = requireHostId(Host.fromEnv(context.env))
    const api = await connect(context, flags.mfa as string | undefined)
    try {
      await removeAllRoles(context, api.resmgr, id, timeoutMs)
      context.stdout.write(`Host ${id} has no roles now.\n`)
      return 0
    } finally {
      await api.close()
    }
  },
}
