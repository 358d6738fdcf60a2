/**
 * The admin compute calls a host drain makes ({base}/compute/v2.1), typed for the fields it reads: the host's
 * compute service (os-services), the servers on a host, server actions and what an action recorded. Every call
 * speaks one fixed microversion, so the answers have the same shape whatever the cloud's default is.
 */
import type { Session } from './session.js'
import { ApiError } from './transport.js'

/**
 * 2.53: services are addressed by uuid (the resource manager's host id) and changed with PUT /os-services/{id};
 * live migration takes `block_migration: "auto"` (from 2.25), so the client need not know the storage layout.
 */
export const COMPUTE_MICROVERSION = '2.53'

export interface ComputeService {
  id: string
  binary: string
  host: string
  status: 'enabled' | 'disabled'
  state: 'up' | 'down'
  disabled_reason: string | null
  forced_down?: boolean
}

export interface ServerView {
  id: string
  name: string
  status: string
  'OS-EXT-STS:vm_state': string
  'OS-EXT-STS:task_state': string | null
  'OS-EXT-SRV-ATTR:host': string | null
}

export interface ActionEvent {
  event: string
  result: string | null
  /** Admins only: the failure, first line `Kind: message`. */
  traceback?: string | null
}

/** Servers per page when listing a host's servers (below every cloud's max_limit). */
const PAGE = 500

export class ComputeClient {
  private readonly headers = { 'openstack-api-version': `compute ${COMPUTE_MICROVERSION}` }

  constructor(
    private readonly session: Session,
    private readonly base: string,
  ) {}

  static async connect(session: Session): Promise<ComputeClient> {
    return new ComputeClient(session, await session.endpoint('compute'))
  }

  /** The nova-compute services, of one host when `host` is given. */
  async services(host?: string): Promise<ComputeService[]> {
    const query = new URLSearchParams({ binary: 'nova-compute', ...(host !== undefined && { host }) })
    return (await this.session.get<{ services: ComputeService[] }>(`${this.base}/os-services?${query}`, this.headers)).services
  }

  async setServiceStatus(id: string, status: 'enabled' | 'disabled', reason?: string): Promise<ComputeService> {
    const body = { status, ...(status === 'disabled' && reason !== undefined && { disabled_reason: reason }) }
    return (await this.session.send<{ service: ComputeService }>('PUT', `${this.base}/os-services/${encodeURIComponent(id)}`, body, this.headers)).body.service
  }

  /** Every server (of every project) placed on the host, page by page. */
  async serversOnHost(hostname: string): Promise<ServerView[]> {
    const all: ServerView[] = []
    let marker: string | undefined
    for (;;) {
      const query = new URLSearchParams({ all_tenants: '1', host: hostname, limit: String(PAGE), ...(marker && { marker }) })
      const { servers } = await this.session.get<{ servers: ServerView[] }>(`${this.base}/servers/detail?${query}`, this.headers)
      all.push(...servers)
      if (servers.length < PAGE) return all
      marker = servers[servers.length - 1].id
    }
  }

  /** The server, or undefined once it is gone. */
  async server(id: string): Promise<ServerView | undefined> {
    try {
      return (await this.session.get<{ server: ServerView }>(`${this.base}/servers/${encodeURIComponent(id)}`, this.headers)).server
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return undefined
      throw err
    }
  }

  /** Asks for a server action; answers the request id, under which os-instance-actions records its outcome. */
  async action(id: string, action: string, body: unknown): Promise<string | undefined> {
    const r = await this.session.send('POST', `${this.base}/servers/${encodeURIComponent(id)}/action`, { [action]: body }, this.headers)
    return r.headers.get('x-openstack-request-id') ?? r.headers.get('x-compute-request-id') ?? undefined
  }

  async actionEvents(id: string, requestId: string): Promise<ActionEvent[]> {
    const url = `${this.base}/servers/${encodeURIComponent(id)}/os-instance-actions/${encodeURIComponent(requestId)}`
    return (await this.session.get<{ instanceAction: { events?: ActionEvent[] } }>(url, this.headers)).instanceAction.events ?? []
  }
}
