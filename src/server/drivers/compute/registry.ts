/**
 * Which driver talks to which host. Simulated hosts put their in-process driver here when they register;
 * agent-backed hosts will put a proxy that speaks the host protocol. The conductor finds drivers only here.
 */
import type { ComputeDriver } from './driver.js'

export class DriverRegistry {
  private readonly drivers = new Map<string, ComputeDriver>()

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
