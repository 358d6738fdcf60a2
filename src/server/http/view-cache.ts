/**
 * Rendered views kept by one process, so a view is not rendered again when nothing in it changed: the servers of
 * the detail list and show (compute, migration 0080), the shows of networks, volumes and images (migration 0128),
 * and whole answers of the port and flavor lists (migration 0129, stamped with their rows). An entry is the
 * UTF-8 JSON of one resource at one variant (for servers: microversion, admin or not; for networks: provider
 * attributes shown or not; whatever else the view depends on) with the stamp it was rendered at: revisions the
 * database raises on every change of what the view shows, whichever process made it. A stale entry is never
 * served: its stamp no longer matches what the caller read. Entries are bytes, ready to be written: a page is one
 * copy of them, not a string to join and encode again. The budget bounds the memory (`PCC_VIEW_CACHE_MB`, per
 * cache); the oldest entries go first (Map order is insertion order; a lookup does not reorder, which would cost
 * more than the rare re-render of a still-used entry).
 *
 * The budget counts what an entry really holds. Each entry's bytes are a Buffer of their own (`encode`): a small
 * `Buffer.from(text)` is a slice of Node's shared 8 KiB pool and keeps the whole slab alive, so 32 MiB of counted
 * JSON held about 100 MiB. Entries of resources deleted since (in any process) are dropped by a sweep that runs at
 * most once a minute, when the cache is used and was given `live`; without it they wait for eviction.
 */
export const DEFAULT_BUDGET_BYTES = 32 * 1024 * 1024
/** What an entry costs beyond its bytes: the Map slot, the entry and Buffer objects, the id, the eviction slot. */
export const ENTRY_OVERHEAD_BYTES = 200
const SWEEP_EVERY_MS = 60_000

export interface Stamp {
  rev: number
  viewRev: number
  /** A kept list's stamp: the rows it shows, each with its revision (docs/architecture.md, "Kept lists"). */
  rows?: string
}

interface Entry extends Stamp {
  json: Buffer
}

export interface ViewCacheOptions {
  budgetBytes?: number
  /** Of these ids, the ones not deleted; the sweep drops the others' entries. */
  live?: (ids: string[]) => Promise<Set<string>>
  sweepEveryMs?: number
}

export class ViewCache {
  /** variant → resource id → entry. */
  private readonly variants = new Map<string, Map<string, Entry>>()
  /** Every entry in insertion order, for eviction. */
  private order: [Map<string, Entry>, string][] = []
  private used = 0
  private readonly budgetBytes: number
  private lastSweep = Date.now()
  private sweeping: Promise<number> | undefined

  constructor(private readonly options: ViewCacheOptions = {}) {
    this.budgetBytes = options.budgetBytes ?? DEFAULT_BUDGET_BYTES
  }

  /** The UTF-8 bytes of `text` in a Buffer of their own (not a slice of the shared pool), as entries must be. */
  static encode(text: string): Buffer {
    const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
    bytes.write(text)
    return bytes
  }

  /** The entries of one variant, to look many resources up; starts a sweep of deleted ones when one is due. */
  variant(name: string): Map<string, Entry> {
    this.sweepIfDue()
    let entries = this.variants.get(name)
    if (!entries) this.variants.set(name, (entries = new Map()))
    return entries
  }

  static lookup(entries: Map<string, Entry>, id: string, stamp: Stamp): Buffer | undefined {
    const entry = entries.get(id)
    return entry && entry.rev === stamp.rev && entry.viewRev === stamp.viewRev && entry.rows === stamp.rows ? entry.json : undefined
  }

  set(entries: Map<string, Entry>, id: string, stamp: Stamp, json: Buffer): void {
    // A pooled slice would pin its slab: keep a copy of its own (encode's buffers are kept as they are).
    let own = json
    if (json.byteOffset !== 0 || json.buffer.byteLength !== json.length) json.copy((own = Buffer.allocUnsafeSlow(json.length)))
    const old = entries.get(id)
    if (old) this.used -= cost(old)
    else this.order.push([entries, id])
    const entry = { ...stamp, json: own }
    entries.set(id, entry)
    this.used += cost(entry)
    while (this.used > this.budgetBytes && this.order.length > 0) {
      const [owner, key] = this.order.shift()!
      const gone = owner.get(key)
      if (gone) this.used -= cost(gone)
      owner.delete(key)
    }
  }

  /**
   * One resource's view as bytes: the kept entry when its stamp matches, else `render`'s answer, kept at `stamp`.
   * The caller reads the stamp before `render` reads the rows, so what is kept is never older than its stamp.
   */
  keep(variant: string, id: string, stamp: Stamp, render: () => Promise<unknown>): Promise<Buffer> {
    return this.keepRendered(variant, id, stamp, async () => ({ body: await render(), stamp }))
  }

  /** As `keep`, for a render that reads its rows anew and says the stamp they had: the answer is kept at that one. */
  async keepRendered(variant: string, id: string, stamp: Stamp, render: () => Promise<{ body: unknown; stamp: Stamp }>): Promise<Buffer> {
    const entries = this.variant(variant)
    const kept = ViewCache.lookup(entries, id, stamp)
    if (kept) return kept
    const rendered = await render()
    const json = ViewCache.encode(JSON.stringify(rendered.body))
    this.set(entries, id, rendered.stamp, json)
    return json
  }

  /** Drops every variant's entry of these resources. */
  forget(ids: Iterable<string>): void {
    for (const id of ids) {
      for (const entries of this.variants.values()) {
        const gone = entries.get(id)
        if (gone) this.used -= cost(gone)
        entries.delete(id)
      }
    }
    // The eviction order keeps only entries that exist, each once.
    const seen = new Map<Map<string, Entry>, Set<string>>()
    this.order = this.order.filter(([owner, key]) => {
      if (!owner.has(key)) return false
      let keys = seen.get(owner)
      if (!keys) seen.set(owner, (keys = new Set()))
      if (keys.has(key)) return false
      keys.add(key)
      return true
    })
  }

  /** Drops the entries of resources deleted since they were kept; answers how many were dropped. */
  async sweep(): Promise<number> {
    if (!this.options.live) return 0
    const ids = new Set<string>()
    for (const entries of this.variants.values()) for (const id of entries.keys()) ids.add(id)
    const all = [...ids]
    const gone: string[] = []
    for (let i = 0; i < all.length; i += 500) {
      const chunk = all.slice(i, i + 500)
      const live = await this.options.live(chunk)
      for (const id of chunk) if (!live.has(id)) gone.push(id)
    }
    this.forget(gone)
    return gone.length
  }

  private sweepIfDue(): void {
    if (this.sweeping || !this.options.live || Date.now() - this.lastSweep < (this.options.sweepEveryMs ?? SWEEP_EVERY_MS)) return
    this.lastSweep = Date.now()
    this.sweeping = this.sweep().finally(() => (this.sweeping = undefined))
    // A failed sweep (the database away) is tried again at the next one; entries are only memory.
    this.sweeping.catch(() => {})
  }

  /** The bytes the entries hold, as counted against the budget. */
  get bytes(): number {
    return this.used
  }

  get size(): number {
    let n = 0
    for (const entries of this.variants.values()) n += entries.size
    return n
  }
}

/** A kept list's stamp: the rows it shows, no revision of its own. */
export const rowsStamp = (rows: string): Stamp => ({ rev: 0, viewRev: 0, rows })

/** The query string of a URL as the client sent it ('' when none): what a kept list answer is kept under. */
export function queryAsSent(url: string): string {
  const at = url.indexOf('?')
  return at < 0 ? '' : url.slice(at + 1)
}

// A list's row stamp is a one-byte string: its length is its size.
const cost = (entry: Entry) => entry.json.length + (entry.rows?.length ?? 0) + ENTRY_OVERHEAD_BYTES
