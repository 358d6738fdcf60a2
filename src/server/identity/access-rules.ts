/**
 * Access rules of application credentials (Keystone's): a token from a credential that has rules may make only
 * the requests one of its rules matches; any other request is 401, as keystonemiddleware answers in front of
 * each OpenStack service. A rule names the service type, the method, and the path under the service's endpoint
 * where `*` matches one path segment and `**` any number of them (docs/identity.md, "Application credentials").
 */
export interface AccessRule {
  service: string
  method: string
  path: string
}

/** The service types each API family answers to, by the family's path prefix (api/families.ts). */
const SERVICE_TYPES_BY_PREFIX: Record<string, readonly string[]> = {
  identity: ['identity'],
  compute: ['compute'],
  network: ['network'],
  volume: ['volume', 'volumev3', 'block-storage'],
  image: ['image'],
}

export const ACCESS_RULE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

const compiled = new Map<string, RegExp>()

/** The pattern as a regular expression: `**` any run of characters, `*` one segment, the rest literal. */
function patternOf(path: string): RegExp {
  let re = compiled.get(path)
  if (re) return re
  const source = path
    .split(/(\*\*|\*)/)
    .map((part) => (part === '**' ? '.*' : part === '*' ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('')
  re = new RegExp(`^${source}$`)
  if (compiled.size < 10_000) compiled.set(path, re)
  return re
}

/** The request as access rules see it: the service types of its family and its path under the family's prefix. */
export function requestTarget(url: string): { services: readonly string[]; path: string } {
  const pathOnly = url.split('?')[0]
  const match = /^\/([^/]+)(\/.*)?$/.exec(pathOnly)
  if (!match) return { services: [], path: pathOnly }
  return { services: SERVICE_TYPES_BY_PREFIX[match[1]] ?? [], path: match[2] ?? '/' }
}

/** Whether one of the rules allows the request (method, URL as received). */
export function accessAllowed(rules: readonly AccessRule[], method: string, url: string): boolean {
  const { services, path } = requestTarget(url)
  return rules.some((rule) => rule.method === method.toUpperCase() && services.includes(rule.service) && patternOf(rule.path).test(path))
}
