/**
 * Rendered server views kept by one process, so a page of a thousand servers is not rendered again when
 * nothing in it changed. An entry is the UTF-8 JSON of one server at one variant (microversion, admin or not)
 * with the stamp it was rendered at: the server row's revision and its view revision, both raised by the
 * database on every change of what the view shows, whichever process made it (migration 0080). A stale entry
 * is never served: its stamp no longer matches what the list query reads. Entries are bytes, ready to be
 * written: a page is one copy of them, not a string to join and encode again. The budget bounds the memory;
 * the oldest entries go first (Map order is insertion order; a lookup does not reorder, which would cost more
 * than the rare re-render of a still-used entry).
 */
export const DEFAULT_BUDGET_BYTES = 32 * 1024 * 1024

export interface Stamp {
  rev: number
  viewRev: number
}

interface Entry extends Stamp {
  json: Buffer
}

export class ServerViewCache {
  /** variant → server id → entry. */
  private readonly variants = new Map<string, Map<string, Entry>>()
  /** Every entry in insertion order, for eviction. */
  private readonly order: [Map<string, Entry>, string][] = []
  private bytes = 0

  constructor(private readonly budgetBytes = DEFAULT_BUDGET_BYTES) {}

  /** The entries of one variant, to look many servers up. */
  variant(name: string): Map<string, Entry> {
    let entries = this.variants.get(name)
    if (!entries) this.variants.set(name, (entries = new Map()))
    return entries
  }

  static lookup(entries: Map<string, Entry>, id: string, stamp: Stamp): Buffer | undefined {
    const entry = entries.get(id)
    return entry && entry.rev === stamp.rev && entry.viewRev === stamp.viewRev ? entry.json : undefined
  }

  set(entries: Map<string, Entry>, id: string, stamp: Stamp, json: Buffer): void {
    const old = entries.get(id)
    if (old) this.bytes -= old.json.length
    else this.order.push([entries, id])
    entries.set(id, { ...stamp, json })
    this.bytes += json.length
    while (this.bytes > this.budgetBytes && this.order.length > 0) {
      const [owner, key] = this.order.shift()!
      const gone = owner.get(key)
      if (gone) this.bytes -= gone.json.length
      owner.delete(key)
    }
  }

  get size(): number {
    let n = 0
    for (const entries of this.variants.values()) n += entries.size
    return n
  }
}
