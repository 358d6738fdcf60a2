/**
 * Device names both sides must agree on. A guest NIC's tap is named after its port, so QEMU (which opens it),
 * the network back end (which puts it in its bridge, behind its rules) and the metadata documents (which tell
 * the guest which link is which) find the same device without asking each other.
 */

/** Linux interface names hold 15 characters; Neutron's are 14: a three-letter prefix and the id's first 11. */
export const shortId = (id: string): string => id.slice(0, 11)

/** The tap of a port: `tap` + the first 11 characters of its id (Neutron's name). */
export function tapName(portId: string): string {
  return `tap${shortId(portId)}`
}
