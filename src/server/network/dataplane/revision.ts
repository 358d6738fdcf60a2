/**
 * Waiting for the data plane's truth to change. The database raises one counter with every change a host's
 * data plane depends on (migration 0092's triggers, so the conductor binding ports and every other writer count);
 * a long-polling agent waits here until the counter moves. One shared loop per process reads the counter every
 * `pollMs` while anyone waits — one indexed read whatever the number of waiting agents — so a change made by any
 * process reaches the waiters of every process within a poll interval.
 */
import type { Store } from '../../storage/store.js'

export class DataplaneRevision {
  private readonly waiters = new Set<(rev: number) => void>()
  private timer: NodeJS.Timeout | undefined
  private stopped = false

  constructor(
    private readonly store: Store,
    private readonly pollMs = 100,
  ) {}

  async current(): Promise<number> {
    const row = await this.store.db.selectFrom('network_dataplane_revision').select('rev').where('id', '=', 1).executeTakeFirst()
    return Number(row?.rev ?? 0)
  }

  /** Resolves with the revision once it differs from `seen`, or with `seen` after `timeoutMs` (or at stop). */
  waitForChange(seen: number, timeoutMs: number, signal?: AbortSignal): Promise<number> {
    if (this.stopped || signal?.aborted) return Promise.resolve(seen)
    return new Promise((resolve) => {
      const done = (rev: number) => {
        clearTimeout(timeout)
        signal?.removeEventListener('abort', abort)
        this.waiters.delete(check)
        resolve(rev)
      }
      const check = (rev: number) => {
        if (rev !== seen) done(rev)
      }
      const abort = () => done(seen)
      const timeout = setTimeout(abort, timeoutMs)
      signal?.addEventListener('abort', abort)
      this.waiters.add(check)
      this.schedule()
    })
  }

  /** Releases every waiter (shutdown: long polls answer at once, so the listener can close). */
  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    for (const w of [...this.waiters]) w(Number.NaN)
  }

  private schedule(): void {
    if (this.timer || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.current()
        .then((rev) => {
          for (const w of [...this.waiters]) w(rev)
        })
        .catch(() => {
          // The store hiccuped: the next tick reads again.
        })
        .finally(() => {
          if (this.waiters.size > 0) this.schedule()
        })
    }, this.pollMs)
    this.timer.unref()
  }
}
