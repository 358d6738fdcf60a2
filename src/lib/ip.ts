/**
 * IPv4 and IPv6 address arithmetic on bigints: parsing (strict), canonical formatting (RFC 5952 for IPv6),
 * CIDR parsing and containment. The network service stores addresses and CIDRs in the canonical text form
 * produced here, so equal addresses are equal strings.
 */

export type IpVersion = 4 | 6

export interface IpAddress {
  version: IpVersion
  value: bigint
}

export interface Cidr {
  version: IpVersion
  /** The network address (host bits zero). */
  network: bigint
  prefix: number
  /** The address as written, which may have host bits set. */
  address: bigint
}

const BITS: Record<IpVersion, number> = { 4: 32, 6: 128 }

export function bitsOf(version: IpVersion): number {
  return BITS[version]
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  let value = 0n
  for (const part of parts) {
    // Leading zeros are ambiguous (octal in some parsers): refuse them, as Neutron's validators do.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined
    const n = Number(part)
    if (n > 255) return undefined
    value = (value << 8n) | BigInt(n)
  }
  return value
}

function parseV6(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined
  let head = text
  let tailV4: bigint | undefined
  const lastColon = text.lastIndexOf(':')
  if (text.includes('.')) {
    tailV4 = parseV4(text.slice(lastColon + 1))
    if (tailV4 === undefined) return undefined
    head = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = head.split('::')
  if (halves.length > 2) return undefined
  const groupsOf = (s: string) => (s === '' ? [] : s.split(':'))
  const left = groupsOf(halves[0])
  const right = halves.length === 2 ? groupsOf(halves[1]) : []
  const missing = 8 - left.length - right.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
  const groups = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right]
  let value = 0n
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined
    value = (value << 16n) | BigInt(parseInt(g, 16))
  }
  if (tailV4 !== undefined) value = (value & ~0xffffffffn) | tailV4
  return value
}

export function parseIp(text: unknown): IpAddress | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 45) return undefined
  if (text.includes(':')) {
    const value = parseV6(text)
    return value === undefined ? undefined : { version: 6, value }
  }
  const value = parseV4(text)
  return value === undefined ? undefined : { version: 4, value }
}

export function formatIp(version: IpVersion, value: bigint): string {
  if (version === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.')
  const groups: number[] = []
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn))
  // RFC 5952: compress the longest run (≥ 2) of zero groups, the first one on a tie.
  let bestStart = -1
  let bestLen = 0
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i
      bestLen = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`
}

/** The canonical text of an address, or undefined when it is not one. */
export function canonicalIp(text: unknown): string | undefined {
  const ip = parseIp(text)
  return ip && formatIp(ip.version, ip.value)
}

export function parseCidr(text: unknown): Cidr | undefined {
  if (typeof text !== 'string') return undefined
  const slash = text.indexOf('/')
  if (slash < 0) return undefined
  const ip = parseIp(text.slice(0, slash))
  const prefixText = text.slice(slash + 1)
  if (!ip || !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined
  const prefix = Number(prefixText)
  if (prefix > BITS[ip.version]) return undefined
  return { version: ip.version, network: ip.value & netmask(ip.version, prefix), prefix, address: ip.value }
}

export function netmask(version: IpVersion, prefix: number): bigint {
  const bits = BigInt(BITS[version])
  const all = (1n << bits) - 1n
  return (all << (bits - BigInt(prefix))) & all
}

export function formatCidr(cidr: Pick<Cidr, 'version' | 'network' | 'prefix'>): string {
  return `${formatIp(cidr.version, cidr.network)}/${cidr.prefix}`
}

/** The network a prefix written with host bits names (10.2.3.124/24 → 10.2.3.0/24), or undefined when it is not one. */
export function networkOfCidr(text: unknown): string | undefined {
  const cidr = parseCidr(text)
  return cidr && formatCidr(cidr)
}

/** Last address of the CIDR (the IPv4 broadcast address). */
export function lastAddress(cidr: Pick<Cidr, 'version' | 'network' | 'prefix'>): bigint {
  return cidr.network | (~netmask(cidr.version, cidr.prefix) & ((1n << BigInt(BITS[cidr.version])) - 1n))
}

export function cidrContains(cidr: Pick<Cidr, 'version' | 'network' | 'prefix'>, ip: IpAddress): boolean {
  return ip.version === cidr.version && (ip.value & netmask(cidr.version, cidr.prefix)) === cidr.network
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  if (a.version !== b.version) return false
  const prefix = Math.min(a.prefix, b.prefix)
  const mask = netmask(a.version, prefix)
  return (a.network & mask) === (b.network & mask)
}

/** Number of addresses in an inclusive range. */
export function rangeSize(start: bigint, end: bigint): bigint {
  return end - start + 1n
}

/** EUI-64 interface identifier of a MAC address in a /64 prefix (SLAAC addresses). */
export function eui64(prefix: bigint, mac: string): bigint {
  const bytes = mac.split(':').map((h) => parseInt(h, 16))
  const id = [bytes[0] ^ 0x02, bytes[1], bytes[2], 0xff, 0xfe, bytes[3], bytes[4], bytes[5]]
  let value = 0n
  for (const b of id) value = (value << 8n) | BigInt(b)
  return prefix | value
}
