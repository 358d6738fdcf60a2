/**
 * Admin → Hosts, second half: the network agents each host runs (Neutron's /v2.0/agents: the services of its
 * roles), whether they are alive, and their admin state, which an admin turns off and on as
 * `openstack network agent set --disable/--enable` does.
 */
import { get, put } from '../../api/http'
import { href } from '../../router'
import { ActionButton, Status, formatTime } from '../../ui/components'
import { ResourceList } from '../../ui/resource-list'
import type { HostView } from './hosts'

export interface NetworkAgent {
  id: string
  agent_type: string
  binary: string
  host: string
  alive: boolean
  admin_state_up: boolean
  availability_zone: string | null
  heartbeat_timestamp: string | null
}

/** An agent with the resource manager's id of its host (for the link to the host's page). */
type Row = NetworkAgent & { hostId?: string }

/** The agents by host, then type, so one host's agents sit together. */
const byHost = (a: NetworkAgent, b: NetworkAgent) => a.host.localeCompare(b.host) || a.agent_type.localeCompare(b.agent_type)

async function loadAgents(signal: AbortSignal): Promise<Row[]> {
  const [agents, hosts] = await Promise.all([get<{ agents: NetworkAgent[] }>('network', '/agents', signal), get<HostView[]>('resmgr', '/hosts', signal)])
  const ids = new Map(hosts.map((h) => [h.info.hostname, h.id]))
  return agents.agents.sort(byHost).map((a) => ({ ...a, hostId: ids.get(a.host) }))
}

export function NetworkAgentsTable() {
  return (
    <ResourceList<Row>
      title="Network agents"
      heading="h2"
      refreshMs={5000}
      load={loadAgents}
      rowKey={(a) => a.id}
      empty="No network agents: a host runs them once it has the hypervisor or network role."
      columns={[
        { label: 'Host', value: (a) => (a.hostId ? <a href={href(`/admin/hosts/${a.hostId}`)}>{a.host}</a> : a.host) },
        { label: 'Type', value: (a) => a.agent_type },
        { label: 'Alive', value: (a) => <Status value={a.alive ? 'UP' : 'DOWN'} /> },
        { label: 'Admin state', value: (a) => <Status value={a.admin_state_up ? 'enabled' : 'disabled'} /> },
        { label: 'Zone', value: (a) => a.availability_zone ?? '' },
        { label: 'Last heartbeat', value: (a) => formatTime(a.heartbeat_timestamp && `${a.heartbeat_timestamp.replace(' ', 'T')}Z`) },
      ]}
      actions={(a, reload) =>
        a.admin_state_up ? (
          <ActionButton label="Disable" danger confirm={`Disable the ${a.agent_type} of ${a.host}?`} run={() => put('network', `/agents/${a.id}`, { agent: { admin_state_up: false } })} onDone={reload} />
        ) : (
          <ActionButton label="Enable" run={() => put('network', `/agents/${a.id}`, { agent: { admin_state_up: true } })} onDone={reload} />
        )
      }
    />
  )
}
