/**
 * What pcc-agent reports about its host: in full when it registers (`POST /resmgr/v1/hosts/register`), and the
 * parts that change in its heartbeats (`POST /resmgr/v1/hosts/{id}/heartbeat`, `facts`). pcc-server stores the
 * two merged in `hosts.facts` and reads them back as StoredHostFacts.
 */
import type { HostNetworkFacts } from '../network/dataplane.js'
import type { ImagesType } from './compute-driver.js'

/** A network interface of the host, with its bond when it is one (/proc/net/bonding). */
export interface HostNic {
  name: string
  mac: string
  ips: string[]
  bond?: { mode: string; slaves: string[] }
}

/** What the agent gathers about its host (src/host/agent/facts.ts) and registers with. */
export interface HostFacts {
  hostname: string
  os_info: { id: string; version_id: string; pretty_name: string }
  arch: string
  cpu: { count: number; model: string; virtualization: boolean }
  memory_mb: number
  disk_gb: number
  nics: HostNic[]
}

/** The `facts` of a heartbeat: sent with the agent's first heartbeat, then when they change or every half hour. */
export interface HeartbeatFacts {
  nics: HostNic[]
  os_info: HostFacts['os_info']
  agent_version: string
  /** The host protocol the agent speaks (src/contracts/host/commands.ts); agents from before it send none (1). */
  protocol_version: number
  hypervisor_type: string
  hypervisor_version: number
  cpu_info: Record<string, unknown>
  /** Where the host keeps guests' disks (HostCapacity.imagesType); absent for simulated hosts and older agents. */
  images_type?: ImagesType
  /** Absent when the host runs no network agent. */
  network?: HostNetworkFacts
}

/** Every field of T optional, at any depth (array items too). */
export type DeepPartial<T> = T extends (infer U)[] ? DeepPartial<U>[] : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T

/**
 * `hosts.facts` as pcc-server reads it back: registration facts (validated field by field) merged with heartbeat
 * facts (validated as an object only, and sent by agents of other versions), and for simulated hosts only the
 * hypervisor fields. So any field, at any depth, may be missing: readers fall back.
 */
export type StoredHostFacts = DeepPartial<Omit<HostFacts, 'hostname'> & HeartbeatFacts>
