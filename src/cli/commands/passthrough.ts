/**
 * Every cloud command pcctl does not implement natively runs the installed openstack client, with the `OS_*`
 * environment built from pcctl's credentials, so `pcctl volume list` behaves as `openstack volume list`.
 */
import { spawn } from 'node:child_process'
import type { CliContext } from '../context.js'
import { openstackEnvironment, resolveCredentials } from '../config/credentials.js'
import { CliFailure } from './config.js'

/** Command groups of the standard client (compute, block storage, network, identity, image and friends). */
export const OPENSTACK_GROUPS = [
  'access', 'address', 'aggregate', 'application', 'availability', 'catalog', 'command', 'complete', 'compute', 'console', 'consistency', 'credential',
  'domain', 'ec2', 'endpoint', 'extension', 'flavor', 'floating', 'group', 'help', 'host', 'hypervisor', 'identity', 'image', 'implied', 'ip', 'keypair',
  'limits', 'module', 'network', 'object', 'policy', 'port', 'project', 'quota', 'region', 'registered', 'role', 'router', 'security', 'server',
  'service', 'snapshot', 'subnet', 'token', 'trust', 'usage', 'user', 'versions', 'volume',
]

export async function runOpenstack(context: CliContext, args: string[]): Promise<number> {
  const credentials = resolveCredentials(context.env, context.configDir, { insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined })
  const env = { ...context.env, ...openstackEnvironment(credentials) }
  context.log('info', 'passing the command to openstack', { args: args.slice(0, 3), source: credentials.source })
  return new Promise((resolve, reject) => {
    const child = spawn('openstack', args, { env, stdio: ['inherit', 'pipe', 'pipe'] })
    child.stdout.pipe(context.stdout as NodeJS.WritableStream, { end: false })
    child.stderr.pipe(context.stderr as NodeJS.WritableStream, { end: false })
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        reject(new CliFailure(`'${args.join(' ')}' is run by the openstack client, which is not installed: install it with \`sudo apt-get install python3-openstackclient\` (or \`pip install python-openstackclient\`)`))
      } else reject(err)
    })
    child.on('close', (code) => resolve(code ?? 1))
  })
}
