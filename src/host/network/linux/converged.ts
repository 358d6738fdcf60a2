/**
 * What this process last converged each router or DHCP namespace to, and when. Converging one runs five to seven
 * commands inside its namespace whatever changed (each a process start: 10–25 ms on a quiet host, ten times that
 * on a busy one), and an apply converges every one of them: on a host with a handful of routers and networks
 * that was 4–13 s an apply under load, and builds waited on it. One whose wanted state is what this process last
 * made of it, and whose devices the host still shows, is left alone; every few minutes each is converged anyway,
 * which repairs what changed by hand inside a namespace (a route, a NAT rule) where the host's listing cannot see.
 */
export const REPAIR_EVERY_MS = 300_000

export class Converged {
  private readonly last = new Map<string, { fingerprint: string; at: number }>()

  constructor(private readonly repairEveryMs = REPAIR_EVERY_MS) {}

  /** Whether `id` was converged to `fingerprint` by this process, recently enough that no repair pass is due. */
  fresh(id: string, fingerprint: string): boolean {
    const last = this.last.get(id)
    return last !== undefined && last.fingerprint === fingerprint && Date.now() - last.at < this.repairEveryMs
  }

  done(id: string, fingerprint: string): void {
    this.last.set(id, { fingerprint, at: Date.now() })
  }

  /** After a failure or a removal: the next apply converges it again. */
  forget(id: string): void {
    this.last.delete(id)
  }
}
