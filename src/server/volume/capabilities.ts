/**
 * What each backend is, as Cinder's drivers report themselves to the scheduler: the capabilities pools and
 * `/capabilities/{host}` show (pools.ts), and which a volume type's extra specs may ask for (Cinder's
 * CapabilitiesFilter): a type whose `vendor_name`, `storage_protocol`, … (or `capabilities:<name>`) differs from
 * the backend's finds no backend, and its volumes go to error. Other extra specs are not capabilities and are
 * left alone (pcc does not refuse specs it does not know).
 */
export interface BackendFacts {
  storageProtocol: string
  thin: boolean
  description: string
}

export const BACKEND_FACTS: Record<string, BackendFacts> = {
  file: { storageProtocol: 'nbd', thin: true, description: 'Sparse raw files, exported over NBD' },
  lvm: { storageProtocol: 'nbd', thin: false, description: 'Thick LVM logical volumes, exported over NBD' },
  ceph: { storageProtocol: 'ceph', thin: true, description: 'Ceph RBD images, opened by QEMU with librbd' },
}
export const VENDOR = 'Open Source'
export const DRIVER_VERSION = '1.0.0'

export function factsOf(backend: string): BackendFacts {
  return BACKEND_FACTS[backend] ?? { storageProtocol: 'nbd', thin: false, description: backend }
}

/** The capabilities an extra spec may name, with the backend's value. */
export function capabilitiesOf(backend: string): Record<string, string | boolean> {
  const facts = factsOf(backend)
  return {
    vendor_name: VENDOR,
    driver_version: DRIVER_VERSION,
    storage_protocol: facts.storageProtocol,
    thin_provisioning_support: facts.thin,
    thick_provisioning_support: !facts.thin,
  }
}

/** Whether a spec's value accepts a capability: `<is> True|False` for booleans, else the same string (any case). */
function accepts(wanted: string, actual: string | boolean): boolean {
  const is = /^<is>\s*(true|false)$/i.exec(wanted.trim())
  if (is) return actual === (is[1].toLowerCase() === 'true')
  return String(actual).toLowerCase() === wanted.trim().toLowerCase()
}

/** The extra specs naming a capability the backend does not have, as `key=value` (empty: the backend fits). */
export function unmetCapabilities(backend: string, extraSpecs: Record<string, string>): string[] {
  const caps = capabilitiesOf(backend)
  const unmet: string[] = []
  for (const [key, value] of Object.entries(extraSpecs)) {
    const name = key.startsWith('capabilities:') ? key.slice('capabilities:'.length) : key
    if (!(name in caps)) continue
    if (!accepts(value, caps[name])) unmet.push(`${key}=${value}`)
  }
  return unmet
}
