/**
 * An nftables ruleset as data — tables of named sets and chains — rendered either whole (delete and recreate the
 * tables: one atomic `nft -f`) or as the difference from the ruleset already loaded: when only the contents of
 * regular chains and the elements of sets changed, just those chains are flushed and refilled and those sets
 * flushed and refilled, in one atomic transaction too. A security-group rule change on a host with hundreds of
 * ports then costs the kernel one short chain instead of the whole ruleset.
 */

export interface NftChain {
  /** `type … hook … priority …; policy …;` for a base chain; absent for a regular chain. */
  hook?: string
  rules: string[]
}

export interface NftSet {
  /** `type …; flags …;` */
  spec: string
  elements: string[]
}

export interface NftTable {
  family: 'bridge' | 'inet' | 'ip'
  name: string
  sets: Map<string, NftSet>
  chains: Map<string, NftChain>
}

export const newTable = (family: NftTable['family'], name: string): NftTable => ({ family, name, sets: new Map(), chains: new Map() })

function renderTable(t: NftTable): string[] {
  const lines = [`table ${t.family} ${t.name}`, `delete table ${t.family} ${t.name}`, `table ${t.family} ${t.name} {`]
  for (const [name, set] of t.sets) {
    lines.push(`  set ${name} {`, `    ${set.spec}`)
    if (set.elements.length) lines.push(`    elements = { ${set.elements.join(', ')} }`)
    lines.push('  }')
  }
  for (const [name, chain] of t.chains) lines.push(`  chain ${name} {`, ...(chain.hook ? [`    ${chain.hook}`] : []), ...chain.rules.map((r) => `    ${r}`), '  }')
  lines.push('}')
  return lines
}

/** The whole ruleset (each table deleted and made again, in one transaction); `table …` first so a first load never fails. */
export function renderWhole(tables: NftTable[]): string {
  return [...tables.flatMap(renderTable), ''].join('\n')
}

/** Removes the tables (nothing of them left). */
export function renderRemoval(tables: { family: string; name: string }[]): string {
  return [...tables.flatMap((t) => [`table ${t.family} ${t.name}`, `delete table ${t.family} ${t.name}`]), ''].join('\n')
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * The changes from `loaded` to `next` as a script, or undefined when they need the whole ruleset (tables, chains
 * or sets added or removed, a base chain or a set's type changed); an empty string when nothing changed.
 */
export function renderDelta(loaded: NftTable[], next: NftTable[]): string | undefined {
  if (loaded.length !== next.length) return undefined
  const out: string[] = []
  for (let i = 0; i < next.length; i++) {
    const a = loaded[i]
    const b = next[i]
    if (a.family !== b.family || a.name !== b.name) return undefined
    if (!same([...a.chains.keys()], [...b.chains.keys()]) || !same([...a.sets.keys()], [...b.sets.keys()])) return undefined
    const at = `${b.family} ${b.name}`
    for (const [name, set] of b.sets) {
      const was = a.sets.get(name)!
      if (was.spec !== set.spec) return undefined
      if (same(was.elements, set.elements)) continue
      out.push(`flush set ${at} ${name}`)
      if (set.elements.length) out.push(`add element ${at} ${name} { ${set.elements.join(', ')} }`)
    }
    for (const [name, chain] of b.chains) {
      const was = a.chains.get(name)!
      if (same(was.rules, chain.rules) && was.hook === chain.hook) continue
      if (chain.hook || was.hook) return undefined
      out.push(`flush chain ${at} ${name}`, ...chain.rules.map((r) => `add rule ${at} ${name} ${r}`))
    }
  }
  return out.length ? out.join('\n') + '\n' : ''
}
