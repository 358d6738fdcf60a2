/** The table of pcctl's own commands. Anything else that names an openstack command group is handed to openstack. */
import type { CommandSpec } from '../spec.js'
import { checkUrl } from './check-url.js'
import { configGet, configSet } from './config.js'
import { generateSupportBundle } from './support-bundle.js'
import { prepNode } from './onboarding/prep-node.js'
import { authorizeNode, deauthorizeNode } from './onboarding/roles.js'
import { decommissionNode } from './onboarding/decommission-node.js'
import { catalogList, projectList, tokenIssue, tokenRevoke, userList } from './cloud/identity.js'
import { flavorList, hypervisorList, keypairList, serverList, serverShow } from './cloud/compute.js'
import { imageList, networkList, volumeList } from './cloud/other.js'

export const COMMANDS: CommandSpec[] = [
  checkUrl,
  configSet,
  configGet,
  prepNode,
  authorizeNode,
  decommissionNode,
  deauthorizeNode,
  generateSupportBundle,
  tokenIssue,
  tokenRevoke,
  catalogList,
  projectList,
  userList,
  serverList,
  serverShow,
  flavorList,
  keypairList,
  hypervisorList,
  imageList,
  networkList,
  volumeList,
]
