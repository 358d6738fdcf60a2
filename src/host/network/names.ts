/**
 * Names of everything the network back end makes on a host: Neutron's names (docs/network.md, "Choices"), so operators
 * recognise them, each derived from the id it serves, so cleanup never guesses — a device or namespace whose
 * name matches these patterns and serves no id of the desired state is the back end's own leftover.
 */
import { shortId as short, tapName } from '../../contracts/network/names.js'

/** Linux interface names hold 15 characters; Neutron's are 14: a prefix and the id's first 11 (`short`). */
export const names = {
  /** The guest's tap (QEMU opens it by this name) or the bridge end of a DHCP/router veth. */
  tap: tapName,
  bridge: (networkId: string) => `brq${short(networkId)}`,
  vxlan: (vni: number) => `vxlan-${vni}`,
  dhcpNamespace: (networkId: string) => `qdhcp-${networkId}`,
  routerNamespace: (routerId: string) => `qrouter-${routerId}`,
  /** The namespace end of the DHCP port's veth. */
  dhcpInside: (portId: string) => `ns-${short(portId)}`,
  routerInterface: (portId: string) => `qr-${short(portId)}`,
  routerGateway: (portId: string) => `qg-${short(portId)}`,
}

/** Patterns of the host devices and namespaces the back end owns. */
export const OWNED = {
  tap: /^tap[0-9a-f]{8}-[0-9a-f]{2}$/,
  bridge: /^brq[0-9a-f]{8}-[0-9a-f]{2}$/,
  vxlan: /^vxlan-\d+$/,
  namespace: /^(qdhcp|qrouter)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
}

/** The address metadata answers on, in every guest's view (a route through the DHCP port). */
export const METADATA_ADDRESS = '169.254.169.254'
