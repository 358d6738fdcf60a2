/**
 * accessIPv4/accessIPv6 as Nova stores them: IP fields, so an IPv6 address comes back in its canonical compressed
 * form (`0000:…:babe:220.12.22.2` → `::babe:dc0c:1602`; Tempest checks it). The schemas have checked the syntax.
 */
import { formatIp, parseIp } from '../../lib/ip.js'

export function accessIpv6(text: string): string {
  const ip = text === '' ? undefined : parseIp(text)
  return ip?.version === 6 ? formatIp(6, ip.value) : text
}
