/**
 * Rendered server views kept by one process, so a page of a thousand servers is not rendered again when
 * nothing in it changed. An entry is the JSON of one server at one (microversion, admin or not) variant and a
 * stamp: the server row's revision and its view revision, both raised by the database on every change of what
 * the view shows, whichever process made it (migration 0080). A stale entry is never served: its stamp no
 * longer matches what the list query reads. The budget bounds the memory; the least recently used go first.
 */
export const DEFAULT_BUDGET_CHARS = 32 * 1024 * 1024

interface Entry {
  stamp: string
  json: string
}

export class ServerViewCache {
  private readonly entries = new Map<string, Entry>()
  private chars = 0

  constructor(private readonly budgetChars = DEFAULT_BUDGET_CHARS) {}

  get(key: string, stamp: string): string | undefined {
    const entry = this.entries.get(key)
    if (!entry || entry.stamp !== stamp) return undefined
    // Map order is insertion order: re-inserting marks it the most recently used.
    this.entries.delete(key)
    this.entries.set(key, entry)
    return entry.json
  }

  set(key: string, stamp: string, json: string): void {
    this.drop(key)
    this.entries.set(key, { stamp, json })
    this.chars += json.length
    while (this.chars > this.budgetChars) this.drop(this.entries.keys().next().value!)
  }

  get size(): number {
    return this.entries.size
  }

  private drop(key: string): void {
    const entry = this.entries.get(key)
    if (!entry) return
    this.entries.delete(key)
    this.chars -= entry.json.length
  }
}
