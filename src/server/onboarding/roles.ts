/** The roles a host can be given through the resource manager. */
export interface RoleDefinition {
  name: string
  display_name: string
  description: string
}

export const ROLES: RoleDefinition[] = [
  {
    name: 'hypervisor',
    display_name: 'Hypervisor',
    description: 'Runs servers: the agent starts the compute service with its configured driver and reports capacity; the host becomes schedulable.',
  },
  {
    name: 'network',
    display_name: 'Network node',
    description: "Runs routers: each router's namespace with SNAT and floating IPs, bridged to the external networks named in the host's agent.json.",
  },
  {
    name: 'storage',
    display_name: 'Block Storage',
    description: 'Holds volumes: the agent runs the file backend (and LVM where volume group cinder-volumes exists) and exports attached volumes over NBD; volume types with pcc:placement storage-host are placed here.',
  },
]

export const CONVERGING = ['applying', 'removing']

/** Platform9's aggregate role_status: '' without roles, converging while any role moves, failed, or ok. */
export function roleStatus(states: string[]): string {
  if (states.length === 0) return ''
  if (states.some((s) => CONVERGING.includes(s))) return 'converging'
  if (states.some((s) => s === 'failed')) return 'failed'
  return 'ok'
}
