/**
 * Which driver talks to which host. Simulated hosts put their in-process driver here when they register;
 * agent-backed hosts will put a proxy that speaks the host protocol. The conductor finds drivers only here.
 */
import type { ComputeDriver } from '../../contracts/host/compute-driver.js'

export class DriverRegistry {
  private readonly drivers = new Map<string, ComputeDriver>()
  private refresh?: () => Promise<void>
  /** The refresh under way: callers missing a host at the same moment wait for one sync, not one each. */
  private refreshing?: Promise<void>

  /**
   * How to look again for hosts other processes registered (the onboarding service's sync, which otherwise runs
   * every 2 s). In a cluster the scheduler, reading the store, may pick a host this process has not synced yet.
   */
  refreshWith(refresh: () => Promise<void>): void {
    this.refresh = refresh
  }

  /** The driver of a host, looked for again (one refresh) when this process does not know the host yet. */
  async find(hostId: string): Promise<ComputeDriver | undefined> {
    await this.ensure([hostId])
    return this.drivers.get(hostId)
  }

  /** Makes sure each of these hosts has its driver here if it has one anywhere (one refresh when any is missing). */
  async ensure(hostIds: (string | null)[]): Promise<void> {
    if (!this.refresh || hostIds.every((id) => id === null || this.drivers.has(id))) return
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined))
    await this.refreshing
  }

  set(hostId: string, driver: ComputeDriver): void {
    this.drivers.set(hostId, driver)
  }

  get(hostId: string): ComputeDriver | undefined {
    return this.drivers.get(hostId)
  }

  delete(hostId: string): void {
    this.drivers.delete(hostId)
  }

  entries(): [string, ComputeDriver][] {
    return [...this.drivers.entries()]
  }
}
