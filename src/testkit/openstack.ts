/**
 * Runs the real `openstack` client (Debian's python3-openstackclient) against a test server. The server must
 * have been started with `publicUrlFromListen: true`, so the catalog points at the address it listens on.
 *
 * Each command runs the client's own entry point (`openstackclient.shell.main`) with its own arguments,
 * environment, standard streams and exit code, inside a Python process that stays up between commands: starting
 * the client costs about 2 s of CPU (Python and the client's plugins load), which the test suite paid hundreds of
 * times. PCC_OPENSTACK_FRESH_PROCESS=1 starts `openstack` anew for every command instead.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import type { Readable, Writable } from 'node:stream'
import { createInterface } from 'node:readline'
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
  const fullEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env }
  return process.env.PCC_OPENSTACK_FRESH_PROCESS === '1' ? freshProcess(args, fullEnv, timeoutMs) : residentClient(args, fullEnv, timeoutMs)
}

/** Runs `openstack ARGS -f json` and parses the output; throws with the client's stderr when it fails. */
export async function openstackJson<T = unknown>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await openstack([...args, '-f', 'json'], env)
  if (result.code !== 0) throw new Error(`openstack ${args.join(' ')} failed (${result.code}): ${result.stderr}`)
  return JSON.parse(result.stdout) as T
}

function freshProcess(args: string[], env: Record<string, string>, timeoutMs: number): Promise<OpenstackResult> {
  return new Promise((resolve) => {
    execFile('openstack', args, { env, timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException).code === 'number' ? Number((err as NodeJS.ErrnoException).code) : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

/**
 * The resident interpreter: loads the client once, then forks a child for each request (one JSON line on stdin:
 * {args, env, cwd, timeoutMs}) that runs the command with its own environment, its stdin on /dev/null and its
 * stdout and stderr in files, and exits with the command's code: nothing one command sets (an endpoint, a logger, a
 * cached session) reaches the next. The answer goes out on fd 3, so that nothing the client prints can garble it.
 */
const RESIDENT = String.raw`
import json, os, signal, sys, tempfile, time, traceback
sys.argv[0] = 'openstack'  # the name the client prints in its usage and version lines (read at import)
from openstackclient import shell
shell.OpenStackShell()  # loads the client's command plugins before any fork
answers = os.fdopen(3, 'w')
for line in sys.stdin:
    request = json.loads(line)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ.clear()
            os.environ.update(request['env'])
            os.chdir(request['cwd'])
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            code = shell.main(request['args']) or 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + request['timeoutMs'] / 1000
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    text = lambda f: (f.seek(0), f.read().decode('utf-8', 'replace'))[1]
    timed_out = '' if time.monotonic() <= deadline else 'openstack: no answer within %d ms\n' % request['timeoutMs']
    answers.write(json.dumps({'code': code if code >= 0 else 1, 'stdout': text(out), 'stderr': text(err) + timed_out}) + '\n')
    answers.flush()
    out.close()
    err.close()
`

interface Resident {
  child: ChildProcess
  answers: AsyncIterator<string>
}

/** Idle interpreters; a command that finds none starts another, so concurrent commands run side by side. */
const idle: Resident[] = []

function startResident(): Resident {
  // The client's own interpreter (the `openstack` script's), not whichever python3 comes first on PATH.
  const child = spawn('/usr/bin/python3', ['-c', RESIDENT], { stdio: ['pipe', 'ignore', 'ignore', 'pipe'] })
  const answers = createInterface({ input: child.stdio[3] as Readable })[Symbol.asyncIterator]()
  child.on('error', () => {})
  return { child, answers }
}

/** An idle interpreter neither keeps the test process alive nor outlives it (it exits when its stdin closes). */
function setReferenced(resident: Resident, referenced: boolean): void {
  const handles = [resident.child, resident.child.stdin, resident.child.stdio[3]] as unknown as { ref(): void; unref(): void }[]
  for (const handle of handles) {
    if (referenced) handle.ref()
    else handle.unref()
  }
}

async function residentClient(args: string[], env: Record<string, string>, timeoutMs: number): Promise<OpenstackResult> {
  const resident = idle.pop() ?? startResident()
  setReferenced(resident, true)
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs + 10_000)))
  try {
    ;(resident.child.stdin as Writable).write(`${JSON.stringify({ args, env, cwd: process.cwd(), timeoutMs })}\n`)
    const answer = await Promise.race([resident.answers.next(), timedOut])
    if (answer === 'timeout' || answer.done) {
      resident.child.kill('SIGKILL')
      return { code: 1, stdout: '', stderr: answer === 'timeout' ? `openstack ${args.join(' ')}: no answer within ${timeoutMs} ms` : 'the openstack client exited' }
    }
    setReferenced(resident, false)
    idle.push(resident)
    return JSON.parse(answer.value) as OpenstackResult
  } finally {
    clearTimeout(timer)
  }
}
