/**
 * Runs the real `openstack` client (Debian's python3-openstackclient) against a test server. The server must
 * have been started with `publicUrlFromListen: true`, so the catalog points at the address it listens on.
 */
import { execFile } from 'node:child_process'
import { ADMIN_PASSWORD, type TestServer } from './harness.js'

export interface OpenstackResult {
  code: number
  stdout: string
  stderr: string
}

export function adminEnv(server: Pick<TestServer, 'url'>): Record<string, string> {
  return {
    OS_AUTH_URL: `${server.url}/identity/v3`,
    OS_USERNAME: 'admin',
    OS_PASSWORD: ADMIN_PASSWORD,
    OS_PROJECT_NAME: 'admin',
    OS_USER_DOMAIN_NAME: 'Default',
    OS_PROJECT_DOMAIN_NAME: 'Default',
    OS_IDENTITY_API_VERSION: '3',
    OS_INTERFACE: 'public',
    OS_REGION_NAME: 'RegionOne',
  }
}

/** Runs `openstack ARGS` with only the given OS_* variables (none inherited from the caller's shell). */
export function openstack(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<OpenstackResult> {
  return new Promise((resolve) => {
    execFile(
      'openstack',
      args,
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env }, timeout: timeoutMs, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as NodeJS.ErrnoException).code === 'number' ? Number((err as NodeJS.ErrnoException).code) : 1) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

/** Runs `openstack ARGS -f json` and parses the output; throws with the client's stderr when it fails. */
export async function openstackJson<T = unknown>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await openstack([...args, '-f', 'json'], env)
  if (result.code !== 0) throw new Error(`openstack ${args.join(' ')} failed (${result.code}): ${result.stderr}`)
  return JSON.parse(result.stdout) as T
}
