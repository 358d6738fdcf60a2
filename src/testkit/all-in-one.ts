/**
 * A real pcc-server process in the all-in-one mode (`PCC_LOCAL_HYPERVISOR=qemu`) inside a test host's network
 * namespace (netns.ts), reached over the test bridge, with an admin token: what the all-in-one tests start (and
 * start again, on the same data dir, to test restarts).
 */
import { ComputeClient } from './compute-api.js'
import { freePort } from './harness.js'
import type { TestHostNetwork } from './netns.js'
import { SERVER_MAIN, spawnServer, type ServerProcess } from './process.js'

export interface AllInOne {
  server: ServerProcess
  url: string
  /** An admin token (project-scoped to `admin`). */
  token: string
  api: ComputeClient
}

export async function startAllInOne(o: { host: TestHostNetwork; dataDir: string; password: string; env?: Record<string, string> }): Promise<AllInOne> {
  const port = await freePort()
  const url = `http://${o.host.address}:${port}`
  const server = spawnServer(
    { PCC_LOCAL_HYPERVISOR: 'qemu', PCC_DATA_DIR: o.dataDir, PCC_LISTEN: `0.0.0.0:${port}`, PCC_PUBLIC_URL: url, PCC_ADMIN_PASSWORD: o.password, PCC_LOG_LEVEL: 'warn', ...o.env },
    [],
    { command: ['nsenter', `--net=/run/netns/${o.host.namespace}`, '--', process.execPath, SERVER_MAIN] },
  )
  try {
    await server.listening(60_000)
    const auth = await fetch(`${url}/identity/v3/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: o.password } } }, scope: { project: { name: 'admin', domain: { id: 'default' } } } } }),
    })
    if (auth.status !== 201) throw new Error(`admin login answered ${auth.status}: ${await auth.text()}`)
    const token = auth.headers.get('x-subject-token')!
    return { server, url, token, api: new ComputeClient(url, token) }
  } catch (err) {
    const ended = await Promise.race([server.exited(), new Promise<undefined>((resolve) => setTimeout(resolve, 100, undefined))])
    await server.stop('SIGTERM')
    // What the server said is what tells a start-up fault from a slow machine.
    throw new Error(`${(err as Error).message} (${ended === undefined ? 'pcc-server was still running' : `pcc-server had exited: ${ended}`}); its stderr: ${server.stderr().slice(-2000) || '(empty)'}; the end of its stdout (warnings and errors at PCC_LOG_LEVEL=warn): ${server.stdout().slice(-2000)}`, { cause: err })
  }
}
