/** The table of pcctl's own commands. Anything else that names an openstack command group is handed to openstack. */
import type { CommandSpec } from '../spec.js'
import { checkUrl } from './check-url.js'
import { configGet, configSet } from './config.js'

export const COMMANDS: CommandSpec[] = [checkUrl, configSet, configGet]
