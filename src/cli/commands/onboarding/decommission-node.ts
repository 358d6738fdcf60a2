/**
 * `pcctl decommission-node`: takes this host out of the cloud. It drains the host first (disables its compute
 * service, moves every server to another hypervisor and waits until it runs none: src/client/host-drain.ts), then
 * removes its roles, deregisters it, stops and removes the agent service and deletes every file onboarding put on
 * the host. A host that cannot be drained is left registered, with its roles and the servers that could not move,
 * and the command says which and why.
 */
import { ComputeClient } from '../../../client/compute.js'
import { DrainFailure, drainHost } from '../../../client/host-drain.js'
import type { CliContext } from '../../context.js'
import { Host } from '../../host/host.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import { AGENT_PATHS, AGENT_SERVICE, MFA_FLAG, connect, parseDuration, requireHostId, type Connected } from './common.js'
import { removeAllRoles } from './roles.js'

/** Servers move one at a time (Nova's default); half an hour covers a few dozen live migrations. */
const DEFAULT_DRAIN_TIMEOUT = '30m'
/** The role removal waits as long as deauthorize-node does by default. */
const ROLE_TIMEOUT = '5m'
export const DECOMMISSION_REASON = 'pcctl decommission-node: draining the host before it leaves the cloud'

/** Drains the host; a drain that cannot finish becomes the command's error, with what to do next. */
async function drain(context: CliContext, api: Connected, id: string, hostname: string, timeoutMs: number): Promise<void> {
  const compute = await ComputeClient.connect(api.session)
  try {
    const report = await drainHost(compute, api.resmgr, { hostId: id, hostname, reason: DECOMMISSION_REASON, timeoutMs, progress: (line) => context.stderr.write(`${line}\n`) })
    if (report.moved.length) context.stderr.write(`✓ ${report.moved.length} server${report.moved.length === 1 ? '' : 's'} moved off ${hostname}\n`)
  } catch (err) {
    if (!(err instanceof DrainFailure)) throw err
    const kept = err.reenabled ? 'its compute service is enabled again' : 'its compute service is as it was'
    throw new CliFailure(
      `cannot decommission ${hostname}: ${err.message}\n` +
        `Nothing was removed: the host keeps its registration and roles, ${kept}, and no server was deleted.\n` +
        'Move or delete the servers named above (openstack server migrate / server delete), or make room on another hypervisor, then run `pcctl decommission-node` again.',
    )
  }
}

export const decommissionNode: CommandSpec = {
  words: ['decommission-node'],
  summary: 'move the servers off this host, remove it from management and purge the pcc components from it',
  flags: [
    { name: 'timeout', short: 't', type: 'string', default: DEFAULT_DRAIN_TIMEOUT, help: 'how long to wait for the servers to move off the host', placeholder: '<string>' },
    MFA_FLAG,
  ],
  async run(context, flags) {
    const timeoutMs = parseDuration(flags.timeout as string)
    const host = Host.fromEnv(context.env)
    const id = requireHostId(host)
    const api = await connect(context, flags.mfa as string | undefined)
    try {
      const view = await api.resmgr.host(id)
      if (view) {
        await drain(context, api, id, view.info.hostname, timeoutMs)
        await removeAllRoles(context, api.resmgr, id, parseDuration(ROLE_TIMEOUT))
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
