/**
 * IP address management. Guarantees, on SQLite and on PostgreSQL with any number of server processes:
 * - an address is held by at most one port: the primary key of ip_allocations is (subnet_id, ip_address);
 * - allocations on one network are serialised by a row lock on the network (callers hold `lockNetwork`
 *   before calling in here), so the first-free search never races; the key is the backstop;
 * - addresses return to the pool when their allocation row goes (port deleted or its fixed_ips changed).
 * Free addresses are handed out lowest first within the subnet's allocation pools. IPv6 subnets in SLAAC or
 * DHCPv6-stateless mode give each port its EUI-64 address instead.
 */
import { randomBytes } from 'node:crypto'
import type { SubnetTable } from '../storage/schema.js'
import type { NetCtx } from './context.js'
import { neutron } from './errors.js'
import { cidrContains, eui64, formatIp, lastAddress, parseCidr, parseIp, type IpVersion } from '../../lib/ip.js'
import type { FixedIp } from './views.js'

export interface FixedIpRequest {
  subnet_id?: string
  ip_address?: string
}

export interface Pool {
  start: string
  end: string
}

const AUTO_ADDRESS_MODES = new Set(['slaac', 'dhcpv6-stateless'])

export const isAutoAddressSubnet = (s: Pick<SubnetTable, 'ip_version' | 'ipv6_address_mode'>) =>
  s.ip_version === 6 && s.ipv6_address_mode !== null && AUTO_ADDRESS_MODES.has(s.ipv6_address_mode)

/** A random MAC address in OpenStack's fa:16:3e prefix. */
export function randomMac(): string {
  return ['fa', '16', '3e', ...[...randomBytes(3)].map((b) => b.toString(16).padStart(2, '0'))].join(':')
}

async function takenAddresses(ctx: NetCtx, subnetId: string): Promise<Set<string>> {
  const rows = await ctx.db.selectFrom('ip_allocations').select('ip_address').where('subnet_id', '=', subnetId).execute()
  return new Set(rows.map((r) => r.ip_address))
}

/** The lowest free address of the subnet's pools, or undefined when the pools are exhausted. */
async function firstFree(ctx: NetCtx, subnet: SubnetTable, alsoTaken: Set<string>): Promise<string | undefined> {
  const taken = await takenAddresses(ctx, subnet.id)
  for (const a of alsoTaken) taken.add(a)
  const version = subnet.ip_version as IpVersion
  for (const pool of JSON.parse(subnet.allocation_pools) as Pool[]) {
    let candidate = parseIp(pool.start)!.value
    const end = parseIp(pool.end)!.value
    // At most |taken| addresses of the pool are in use, so one of the first |taken|+1 candidates is free.
    for (let steps = 0; candidate <= end && steps <= taken.size; steps++, candidate++) {
      const text = formatIp(version, candidate)
      if (!taken.has(text)) return text
    }
  }
  return undefined
}

function slaacAddress(subnet: SubnetTable, mac: string): string {
  const cidr = parseCidr(subnet.cidr)!
  return formatIp(6, eui64(cidr.network, mac))
}

/** Whether an address may be given to a port at all (inside the CIDR, not the IPv4 network or broadcast address). */
export function usableInSubnet(subnet: SubnetTable, ip: string): boolean {
  const parsed = parseIp(ip)
  const cidr = parseCidr(subnet.cidr)!
  if (!parsed || !cidrContains(cidr, parsed)) return false
  if (cidr.version === 4 && cidr.prefix < 31 && (parsed.value === cidr.network || parsed.value === lastAddress(cidr))) return false
  return true
}

/**
 * Picks the addresses of a port. `requests` undefined means Neutron's default: one address from the first
 * IPv4 subnet with room, one from the first stateful IPv6 subnet with room, and the EUI-64 address on every
 * SLAAC subnet. Explicit requests get exactly what they ask for, plus (with `implicitAutoAddresses`) the
 * EUI-64 address of every SLAAC subnet they do not name. The caller holds the network's row lock.
 */
export async function allocateIps(
  ctx: NetCtx,
  networkId: string,
  port: { id: string; mac: string },
  requests: FixedIpRequest[] | undefined,
  options: { implicitAutoAddresses?: boolean } = {},
): Promise<FixedIp[]> {
  const subnets = await ctx.db.selectFrom('subnets').selectAll().where('network_id', '=', networkId).orderBy('created_at').orderBy('id').execute()
  const chosen: FixedIp[] = []
  const pending = new Map<string, Set<string>>()
  const pendingOf = (subnetId: string) => pending.get(subnetId) ?? pending.set(subnetId, new Set()).get(subnetId)!
  const claim = (subnet: SubnetTable, ip: string) => {
    pendingOf(subnet.id).add(ip)
    chosen.push({ subnet_id: subnet.id, ip_address: ip })
  }

  if (requests === undefined) {
    for (const version of [4, 6] as const) {
      const candidates = subnets.filter((s) => s.ip_version === version && !isAutoAddressSubnet(s))
      if (candidates.length === 0) continue
      let got = false
      for (const subnet of candidates) {
        const ip = await firstFree(ctx, subnet, pendingOf(subnet.id))
        if (ip) {
          claim(subnet, ip)
          got = true
          break
        }
      }
      if (!got) throw neutron.ipAddressGenerationFailure(networkId)
    }
    for (const subnet of subnets.filter(isAutoAddressSubnet)) claim(subnet, slaacAddress(subnet, port.mac))
  } else {
    for (const request of requests) {
      let subnet: SubnetTable | undefined
      let ip: string | undefined
      if (request.ip_address !== undefined) {
        const parsed = parseIp(request.ip_address)
        if (!parsed) throw neutron.invalidInput(`'${request.ip_address}' is not a valid IP address.`)
        ip = formatIp(parsed.version, parsed.value)
      }
      if (request.subnet_id !== undefined) {
        subnet = subnets.find((s) => s.id === request.subnet_id)
        if (!subnet) throw neutron.invalidInput(`Failed to create port on network ${networkId}, because fixed_ips included invalid subnet ${request.subnet_id}.`)
      } else if (ip !== undefined) {
        const parsed = parseIp(ip)!
        subnet = subnets.find((s) => cidrContains(parseCidr(s.cidr)!, parsed))
        if (!subnet) throw neutron.invalidIpForNetwork(ip)
      } else {
        throw neutron.invalidInput('fixed_ips entries need a subnet_id or an ip_address.')
      }
      if (ip === undefined) {
        ip = isAutoAddressSubnet(subnet) ? slaacAddress(subnet, port.mac) : await firstFree(ctx, subnet, pendingOf(subnet.id))
        if (!ip) throw neutron.ipAddressGenerationFailure(networkId)
      } else {
        if (!usableInSubnet(subnet, ip)) throw neutron.invalidIpForSubnet(ip)
        if (pendingOf(subnet.id).has(ip)) throw neutron.ipAddressAlreadyAllocated(ip, subnet.id)
        const holder = await ctx.db.selectFrom('ip_allocations').select('port_id').where('subnet_id', '=', subnet.id).where('ip_address', '=', ip).executeTakeFirst()
        if (holder && holder.port_id !== port.id) throw neutron.ipAddressAlreadyAllocated(ip, subnet.id)
      }
      claim(subnet, ip)
    }
    // As Neutron: explicit fixed_ips still get the SLAAC address of every auto-address subnet (router ports excepted).
    if (options.implicitAutoAddresses) {
      for (const subnet of subnets.filter(isAutoAddressSubnet)) {
        if (!chosen.some((c) => c.subnet_id === subnet.id)) claim(subnet, slaacAddress(subnet, port.mac))
      }
    }
  }
  return chosen
}

/** Writes the chosen addresses of a port, replacing the ones it had. */
export async function recordIps(ctx: NetCtx, networkId: string, portId: string, ips: FixedIp[]): Promise<void> {
  await ctx.db.deleteFrom('ip_allocations').where('port_id', '=', portId).execute()
  if (ips.length === 0) return
  await ctx.db
    .insertInto('ip_allocations')
    .values(ips.map((ip) => ({ subnet_id: ip.subnet_id, ip_address: ip.ip_address, port_id: portId, network_id: networkId, created_at: ctx.now })))
    .execute()
}

/** True for the errors a duplicate key raises on either dialect (the IPAM backstop, concurrent default groups). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string }
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE'
}
