/**
 * Neutron's agents (`/v2.0/agents`): the network services each host's pcc-agent runs, shown as Neutron shows
 * its agents. They are derived from the hosts' roles (docs/network.md, "Agents"): a `hypervisor` host runs a
 * Linux bridge agent (its bridges and tunnels), a DHCP agent (its dnsmasq) and a metadata agent (its metadata
 * proxy); a `network` host runs an L3 agent (its routers) and a Linux bridge agent. An agent is alive while its
 * host heartbeats. Only what an admin sets (admin_state_up, description) is stored (`network_agents`), so an
 * agent's id is derived from its host and type: the same agent has the same id in every process and after a
 * restart, and a host losing a role loses its agents with nothing left to clean up.
 */
import { createHash } from 'node:crypto'
import type { NetworkAgentTable } from '../storage/schema.js'
import type { Db } from '../storage/store.js'
import { isUp } from '../hosts/host-status.js'
import { can, must, parseJson, type Actor, type NetCtx } from './context.js'
import { neutron } from './errors.js'
import type { View } from './views.js'

export const DHCP_AGENT = 'DHCP agent'
export const L3_AGENT = 'L3 agent'

interface AgentKind {
  type: string
  binary: string
  topic: string
  /** The host roles whose hosts run this agent. */
  roles: string[]
  /** Neutron shows an availability zone for the agents that schedule resources only. */
  zoned: boolean
}

const AGENT_KINDS: AgentKind[] = [
  { type: DHCP_AGENT, binary: 'neutron-dhcp-agent', topic: 'dhcp_agent', roles: ['hypervisor'], zoned: true },
  { type: L3_AGENT, binary: 'neutron-l3-agent', topic: 'l3_agent', roles: ['network'], zoned: true },
  { type: 'Linux bridge agent', binary: 'neutron-linuxbridge-agent', topic: 'N/A', roles: ['hypervisor', 'network'], zoned: false },
  { type: 'Metadata agent', binary: 'neutron-metadata-agent', topic: 'N/A', roles: ['hypervisor'], zoned: false },
]

/** What an update may set; its schema (api/network/schemas.ts agentUpdate) lets a null description through, which keeps the one set. */
export interface AgentBody {
  admin_state_up?: boolean
  description?: string | null
}

interface AgentHost {
  id: string
  hostname: string
  availability_zone: string
  facts: string
  forced_down: number
  last_heartbeat_at: number | null
  service_status: 'enabled' | 'disabled'
  created_at: number
  /** When the host's roles last reached ok: the agents' start. */
  started_at: number
  roles: Set<string>
}

/** A stable UUID-shaped id for the agent of `type` on host `hostId`. */
export function agentId(hostId: string, type: string): string {
  const hex = createHash('sha256').update(`neutron-agent/${hostId}/${type}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** Neutron's agent times: "YYYY-MM-DD HH:MM:SS", UTC. */
const agentTime = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString().slice(0, 19).replace('T', ' '))

/** The hosts running at least one agent, each with its roles in state ok. */
async function agentHosts(db: Db): Promise<AgentHost[]> {
  const rows = await db
    .selectFrom('hosts')
    .innerJoin('host_roles', 'host_roles.host_id', 'hosts.id')
    .select(['hosts.id', 'hosts.hostname', 'hosts.availability_zone', 'hosts.facts', 'hosts.forced_down', 'hosts.last_heartbeat_at', 'hosts.service_status', 'hosts.created_at', 'host_roles.role', 'host_roles.updated_at'])
    .where('host_roles.state', '=', 'ok')
    .where('host_roles.role', 'in', [...new Set(AGENT_KINDS.flatMap((k) => k.roles))])
    .orderBy('hosts.hostname')
    .execute()
  const hosts = new Map<string, AgentHost>()
  for (const r of rows) {
    const host = hosts.get(r.id) ?? { ...r, started_at: r.updated_at, roles: new Set<string>() }
    host.roles.add(r.role)
    host.started_at = Math.max(host.started_at, r.updated_at)
    hosts.set(r.id, host)
  }
  return [...hosts.values()]
}

function agentView(host: AgentHost, kind: AgentKind, settings: NetworkAgentTable | undefined, now: number, downAfterMs: number): View {
  const tunnel = parseJson<{ network?: { tunnel_ip?: unknown } | null } | null>(host.facts)?.network?.tunnel_ip
  return {
    id: agentId(host.id, kind.type),
    agent_type: kind.type,
    binary: kind.binary,
    topic: kind.topic,
    host: host.hostname,
    admin_state_up: settings ? settings.admin_state_up === 1 : true,
    alive: isUp(host, now, downAfterMs),
    availability_zone: kind.zoned ? host.availability_zone : null,
    description: settings?.description ?? null,
    configurations: kind.type === 'Linux bridge agent' ? { tunnel_types: ['vxlan'], tunneling_ip: typeof tunnel === 'string' ? tunnel : null } : {},
    resources_synced: null,
    created_at: agentTime(host.created_at),
    started_at: agentTime(host.started_at),
    heartbeat_timestamp: agentTime(host.last_heartbeat_at),
  }
}

/** Every agent of every host, as admins see them. */
async function allAgents(ctx: NetCtx, downAfterMs: number): Promise<View[]> {
  const hosts = await agentHosts(ctx.db)
  const settings = new Map((await ctx.db.selectFrom('network_agents').selectAll().execute()).map((s) => [s.id, s]))
  return hosts.flatMap((host) =>
    AGENT_KINDS.filter((kind) => kind.roles.some((role) => host.roles.has(role))).map((kind) => agentView(host, kind, settings.get(agentId(host.id, kind.type)), ctx.now, downAfterMs)),
  )
}

/** Admins see every agent; anyone else an empty list, as Neutron filters a list by get_agent. */
export async function listAgents(ctx: NetCtx, actor: Actor, downAfterMs: number): Promise<View[]> {
  if (!can(actor, 'get_agent')) return []
  return allAgents(ctx, downAfterMs)
}

async function visibleAgent(ctx: NetCtx, actor: Actor, id: string, downAfterMs: number): Promise<View> {
  const agent = can(actor, 'get_agent') ? (await allAgents(ctx, downAfterMs)).find((a) => a.id === id) : undefined
  if (!agent) throw neutron.notFound('AgentNotFound', `Agent ${id} could not be found.`)
  return agent
}

export async function showAgent(ctx: NetCtx, actor: Actor, id: string, downAfterMs: number): Promise<View> {
  return visibleAgent(ctx, actor, id, downAfterMs)
}

export async function updateAgent(ctx: NetCtx, actor: Actor, id: string, body: AgentBody, downAfterMs: number): Promise<View> {
  const agent = await visibleAgent(ctx, actor, id, downAfterMs)
  must(actor, 'update_agent')
  const hostId = (await ctx.db.selectFrom('hosts').select('id').where('hostname', '=', agent.host as string).executeTakeFirstOrThrow()).id
  const current = await ctx.db.selectFrom('network_agents').selectAll().where('id', '=', id).executeTakeFirst()
  const row: NetworkAgentTable = {
    id,
    host_id: hostId,
    agent_type: agent.agent_type as string,
    admin_state_up: (body.admin_state_up ?? agent.admin_state_up) ? 1 : 0,
    description: body.description ?? current?.description ?? null,
    updated_at: ctx.now,
  }
  if (current) await ctx.db.updateTable('network_agents').set(row).where('id', '=', id).execute()
  else await ctx.db.insertInto('network_agents').values(row).execute()
  return visibleAgent(ctx, actor, id, downAfterMs)
}

/**
 * Neutron forgets a deleted agent's record, and an agent still running registers again at its next report.
 * Here the agent is its host's role, so deleting it forgets what was set on it (admin state, description): it
 * is listed again, up, while its host keeps the role.
 */
export async function deleteAgent(ctx: NetCtx, actor: Actor, id: string, downAfterMs: number): Promise<void> {
  await visibleAgent(ctx, actor, id, downAfterMs)
  must(actor, 'delete_agent')
  await ctx.db.deleteFrom('network_agents').where('id', '=', id).execute()
}

/** The hosts whose agent of `type` an admin set down (admin_state_up false). */
export async function hostsWithAgentDown(db: Db, type: string): Promise<Set<string>> {
  const rows = await db.selectFrom('network_agents').select('host_id').where('agent_type', '=', type).where('admin_state_up', '=', 0).execute()
  return new Set(rows.map((r) => r.host_id))
}
