/**
 * Neutron's exceptions, by name: the `type` in `{"NeutronError": {type, message, detail}}` is the class name
 * clients match on, and the status comes from the AppError code. Messages follow Neutron's wording.
 */
import { AppError, type ErrorCode } from '../../contracts/errors.js'

const err = (code: ErrorCode, type: string, message: string) => new AppError(code, message, { type })

export const neutron = {
  invalidInput: (message: string) => err('bad_request', 'InvalidInput', `Invalid input for operation: ${message}`),
  badRequest: (resource: string, message: string) => err('bad_request', 'BadRequest', `Bad ${resource} request: ${message}.`),
  networkNotFound: (id: string) => err('not_found', 'NetworkNotFound', `Network ${id} could not be found.`),
  subnetNotFound: (id: string) => err('not_found', 'SubnetNotFound', `Subnet ${id} could not be found.`),
  portNotFound: (id: string) => err('not_found', 'PortNotFound', `Port ${id} could not be found.`),
  securityGroupNotFound: (id: string) => err('not_found', 'SecurityGroupNotFound', `Security group ${id} does not exist`),
  securityGroupRuleNotFound: (id: string) => err('not_found', 'SecurityGroupRuleNotFound', `Security group rule ${id} does not exist`),
  routerNotFound: (id: string) => err('not_found', 'RouterNotFound', `Router ${id} could not be found`),
  floatingIpNotFound: (id: string) => err('not_found', 'FloatingIPNotFound', `Floating IP ${id} could not be found`),
  ipAddressGenerationFailure: (networkId: string) => err('conflict', 'IpAddressGenerationFailure', `No more IP addresses available on network ${networkId}.`),
  ipAddressAlreadyAllocated: (ip: string, subnetId: string) =>
    err('conflict', 'IpAddressAlreadyAllocated', `IP address ${ip} already allocated in subnet ${subnetId}`),
  invalidIpForSubnet: (ip: string) => err('bad_request', 'InvalidIpForSubnet', `IP address ${ip} is not a valid IP for the specified subnet.`),
  invalidIpForNetwork: (ip: string) => err('bad_request', 'InvalidIpForNetwork', `IP address ${ip} is not a valid IP for any of the subnets on the specified network.`),
  macAddressInUse: (mac: string, networkId: string) =>
    err('conflict', 'MacAddressInUse', `Unable to complete operation for network ${networkId}. The mac address ${mac} is in use.`),
  overQuota: (resources: string[]) => err('conflict', 'OverQuota', `Quota exceeded for resources: [${resources.map((r) => `'${r}'`).join(', ')}].`),
  networkInUse: (id: string) =>
    err('conflict', 'NetworkInUse', `Unable to complete operation on network ${id}. There are one or more ports still in use on the network.`),
  subnetInUse: (id: string) =>
    err('conflict', 'SubnetInUse', `Unable to complete operation on subnet ${id}: One or more ports have an IP allocation from this subnet.`),
  portInUse: (portId: string, networkId: string, deviceId: string) =>
    err('conflict', 'PortInUse', `Unable to complete operation on port ${portId} for network ${networkId}. Port already has an attached device ${deviceId}.`),
  l3PortInUse: (portId: string, owner: string) =>
    err('conflict', 'L3PortInUse', `Port ${portId} has owner ${owner} and therefore cannot be deleted directly via the port API.`),
  securityGroupInUse: (id: string) => err('conflict', 'SecurityGroupInUse', `Security Group ${id} in use.`),
  securityGroupCannotRemoveDefault: () => err('conflict', 'SecurityGroupCannotRemoveDefault', 'Insufficient rights for removing default security group.'),
  securityGroupDefaultAlreadyExists: () => err('conflict', 'SecurityGroupDefaultAlreadyExists', 'Default security group already exists.'),
  securityGroupRuleExists: (ruleId: string) => err('conflict', 'SecurityGroupRuleExists', `Security group rule already exists. Rule id is ${ruleId}.`),
  securityGroupRuleInvalid: (type: string, message: string) => err('bad_request', type, message),
  routerInUse: (id: string) => err('conflict', 'RouterInUse', `Router ${id} still has ports`),
  routerInterfaceNotFoundForSubnet: (routerId: string, subnetId: string) =>
    err('not_found', 'RouterInterfaceNotFoundForSubnet', `Router ${routerId} has no interface on subnet ${subnetId}`),
  routerInterfaceNotFound: (routerId: string, portId: string) =>
    err('not_found', 'RouterInterfaceNotFound', `Router ${routerId} does not have an interface with id ${portId}`),
  routerInterfaceInUseByFloatingIp: (routerId: string, subnetId: string) =>
    err('conflict', 'RouterInterfaceInUseByFloatingIP', `Router interface for subnet ${subnetId} on router ${routerId} cannot be deleted, as it is required by one or more floating IPs.`),
  gatewayInUseByFloatingIp: (routerId: string, networkId: string) =>
    err('conflict', 'RouterExternalGatewayInUseByFloatingIp', `Gateway cannot be updated for router ${routerId}, since a gateway to external network ${networkId} is required by one or more floating IPs.`),
  externalGatewayForFloatingIpNotFound: (externalNetworkId: string, subnetId: string, portId: string) =>
    err(
      'not_found',
      'ExternalGatewayForFloatingIPNotFound',
      `External network ${externalNetworkId} is not reachable from subnet ${subnetId}. Therefore, cannot associate Port ${portId} with a Floating IP.`,
    ),
  floatingIpPortAlreadyAssociated: (fipId: string, fip: string, portId: string, fixed: string, netId: string) =>
    err(
      'conflict',
      'FloatingIPPortAlreadyAssociated',
      `Cannot associate floating IP ${fip} (${fipId}) with port ${portId} using fixed IP ${fixed}, as that fixed IP already has a floating IP on external network ${netId}.`,
    ),
  gatewayConflictWithAllocationPools: (gateway: string, pool: string) =>
    err('conflict', 'GatewayConflictWithAllocationPools', `Gateway ip ${gateway} conflicts with allocation pool ${pool}.`),
  ipAddressInUse: (ip: string, networkId: string) =>
    err('conflict', 'IpAddressInUse', `Unable to complete operation for network ${networkId}. The IP address ${ip} is in use.`),
  policyNotAuthorized: (action: string) => err('forbidden', 'PolicyNotAuthorized', `(rule:${action}) is disallowed by policy`),
  conflict: (type: string, message: string) => err('conflict', type, message),
  invalid: (type: string, message: string) => err('bad_request', type, message),
  notFound: (type: string, message: string) => err('not_found', type, message),
}
