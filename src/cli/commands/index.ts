/** The table of pcctl's own commands. Anything else that names an openstack command group is handed to openstack. */
import type { CommandSpec } from '../spec.js'
import { checkUrl } from './check-url.js'
import { configGet, configSet } from './config.js'
import { generateSupportBundle } from './support-bundle.js'
import { prepNode } from './onboarding/prep-node.js'
import { authorizeNode, deauthorizeNode } from './onboarding/roles.js'
import { decommissionNode } from './onboarding/decommission-node.js'
import { IDENTITY_COMMANDS } from './cloud/identity.js'
import { COMPUTE_COMMANDS } from './cloud/compute.js'
import { FLAVOR_COMMANDS } from './cloud/flavor.js'
import { KEYPAIR_COMMANDS } from './cloud/keypair.js'
import { IMAGE_COMMANDS } from './cloud/image.js'
import { imageBuild } from './cloud/image-build.js'
import { VOLUME_COMMANDS } from './cloud/volume.js'
import { NETWORK_COMMANDS } from './cloud/network.js'
import { HOST_COMMANDS } from './cloud/hosts.js'

export const COMMANDS: CommandSpec[] = [
  checkUrl,
  configSet,
  configGet,
  prepNode,
  authorizeNode,
  decommissionNode,
  deauthorizeNode,
  generateSupportBundle,
  ...IDENTITY_COMMANDS,
  ...COMPUTE_COMMANDS,
  ...FLAVOR_COMMANDS,
  ...KEYPAIR_COMMANDS,
  ...IMAGE_COMMANDS,
  imageBuild,
  ...VOLUME_COMMANDS,
  ...NETWORK_COMMANDS,
  ...HOST_COMMANDS,
]
