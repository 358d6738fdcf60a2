/**
 * `pcctl decommission-node`: takes this host out of the cloud: removes its roles, deregisters it, stops and
 * removes the agent service and deletes every file onboarding put on the host.
 */
import { Host } from '../../host/host.js'
import type { CommandSpec } from '../../spec.js'
import { AGENT_PATHS, AGENT_SERVICE, MFA_FLAG, connect, parseDuration, requireHostId } from './common.js'
import { removeAllRoles } from './roles.js'

export const decommissionNode: CommandSpec = {
  words: ['decommission-node'],
  summary: 'remove this host from management and purge the pcc components from it',
  flags: [MFA_FLAG],
  async run(context, flags) {
    const host = Host.fromEnv(context.env)
    const id = requireHostId(host)
    const api = await connect(context, flags.mfa as string | undefined)
    try {
      if (await api.resmgr.host(id)) {
        await removeAllRoles(context, api.resmgr, id, parseDuration('5m'))
        await api.resmgr.deleteHost(id)
        context.stderr.write(`✓ host ${id} deregistered\n`)
      } else {
        context.stderr.write(`- host ${id} was not registered any more\n`)
      }
    } finally {
      await api.close()
    }
    await host.stopService(AGENT_SERVICE)
    context.stderr.write('✓ agent service stopped\n')
    const removed = AGENT_PATHS.filter((path) => host.remove(path))
    context.stderr.write(`✓ removed ${removed.length ? removed.join(', ') : 'nothing (already clean)'}\n`)
    context.stdout.write(`Host ${id} is decommissioned.\n`)
    return 0
  },
}
