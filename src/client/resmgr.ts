/** Typed calls of the resource manager's host onboarding API ({base}/resmgr/v1), as pcctl and the tests use them. */
import type { Session } from './session.js'
import { ApiError } from './transport.js'

export interface HostView {
  id: string
  info: { hostname: string; os_family?: string; arch?: string; responding: boolean; last_response_time?: string | null }
  roles: string[]
  role_status: string
  roles_status_details: Record<string, string>
  message?: string
}

export class ResmgrClient {
  constructor(
    private readonly session: Session,
    private readonly base: string,
  ) {}

  static async connect(session: Session): Promise<ResmgrClient> {
    return new ResmgrClient(session, await session.endpoint('resmgr'))
  }

  async createRegistrationToken(expiresIn = 3600): Promise<{ token: string; id: string; expires_at: string }> {
    return (await this.session.send<{ token: string; id: string; expires_at: string }>('POST', `${this.base}/v1/registration-tokens`, { expires_in: expiresIn, note: 'pcctl prep-node' })).body
  }

  /** The host, or undefined when the resource manager does not know it (yet, or any more). */
  async host(id: string): Promise<HostView | undefined> {
    try {
      return await this.session.get<HostView>(`${this.base}/v1/hosts/${encodeURIComponent(id)}`)
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return undefined
      throw err
    }
  }

  async hosts(): Promise<HostView[]> {
    return this.session.get<HostView[]>(`${this.base}/v1/hosts`)
  }

  async assignRole(id: string, role: string): Promise<void> {
    await this.session.send('PUT', `${this.base}/v1/hosts/${encodeURIComponent(id)}/roles/${encodeURIComponent(role)}`, {})
  }

  async removeRole(id: string, role: string, force = false): Promise<void> {
    await this.session.send('DELETE', `${this.base}/v1/hosts/${encodeURIComponent(id)}/roles/${encodeURIComponent(role)}${force ? '?force=true' : ''}`)
  }

  async deleteHost(id: string): Promise<void> {
    await this.session.send('DELETE', `${this.base}/v1/hosts/${encodeURIComponent(id)}`)
  }
}
