/**
 * pcctl's onboarding commands on scratch host roots against one control plane, seen through `pcctl host list`:
 * prep-node registers the host (and a second run changes nothing), authorize-node (deprecated) gives it a role,
 * deauthorize-node waits for the agent with progress lines, decommission-node takes it out; and for an admin under
 * multi-factor authentication (spec rule 7) every onboarding command needs --mfa.
 *
 * Covered elsewhere and not repeated here: the files decommission-node deletes and the 404 of the deregistered
 * host, prep-node restarting a killed agent, and the same flow as separate processes in network namespaces
 * (test/agent/onboarding-three-hosts.test.ts); the preflight checks (test/cli/prep-node.test.ts); the
 * password+TOTP login itself (test/identity/auth-mfa.test.ts).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { HOST_PROTOCOL_VERSION } from '../../src/contracts/host/commands.js'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { cliSandbox, type CliRun } from '../../src/testkit/cli.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { agentPid, alive, hostIdOf, stageHostRoot } from '../../src/testkit/host-root.js'
import { TotpApp } from '../../src/testkit/totp.js'
import { adminEnv } from '../../src/testkit/openstack.js'

type HostRow = { ID: string; Hostname: string; Roles: string[]; 'Role Status': string; Responding: boolean; 'Agent Version': string; Protocol: number | null }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

/** Every file under a root with its content (directories as ''), to prove a refused command wrote nothing. */
function snapshot(root: string): Record<string, string> {
  const files: Record<string, string> = {}
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) {
        files[relative(root, path) + '/'] = ''
        walk(path)
      } else files[relative(root, path)] = readFileSync(path, 'utf8')
    }
  }
  walk(root)
  return files
}

describe('pcctl onboarding on scratch host roots', () => {
  let server: TestServer
  let env: Record<string, string>
  let token: string
  const sandbox = cliSandbox()
  const roots: string[] = []

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
    env = adminEnv(server)
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  })
  after(async () => {
    for (const root of roots) {
      if (existsSync(join(root, 'run/pcc-agent.pid'))) {
        const pid = agentPid(root)
        try {
          process.kill(pid, 'SIGCONT')
          process.kill(pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
      rmSync(root, { recursive: true, force: true })
    }
    await server?.close()
  })

  const pcctl = (root: string, args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> => sandbox.run(args, { ...env, ...extraEnv, PCCTL_HOST_ROOT: root })
  const hostList = async (): Promise<HostRow[]> => {
    const r = await sandbox.run(['host', 'list', '-f', 'json'], env)
    assert.equal(r.code, 0, r.stderr)
    return JSON.parse(r.stdout) as HostRow[]
  }
  const hostRow = async (id: string) => (await hostList()).find((h) => h.ID === id)
  const api = async (path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { 'x-auth-token': token } })
    return (await res.json()) as Record<string, unknown>
  }
  const noStack = (r: CliRun) => assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')

  describe('an admin with a password', () => {
    let root: string
    let id: string

    it('prep-node registers the host, and pcctl host list shows it responding without roles', async () => {
      root = stageHostRoot({ hostname: 'cli-node-1' })
      roots.push(root)
      const r = await pcctl(root, ['prep-node', '--no-prompt'])
      assert.equal(r.code, 0, r.stderr)
      id = hostIdOf(root)
      assert.match(r.stdout, new RegExp(`Host cli-node-1 is onboarded with id ${id}\\.`))
      const { 'Agent Version': version, ...row } = (await hostRow(id))!
      assert.deepEqual(row, { ID: id, Hostname: 'cli-node-1', Roles: [], 'Role Status': '', Responding: true, Protocol: HOST_PROTOCOL_VERSION })
      assert.match(version, /^\d+\.\d+\.\d+/, 'the agent reports its version')
    })

    it('prep-node again on the onboarded host with its agent running changes nothing', async () => {
      const pid = agentPid(root)
      const agentJson = readFileSync(join(root, 'etc/pcc/agent.json'), 'utf8')
      const tokens = async () => (await server.deps.store.db.selectFrom('registration_tokens').select('id').execute()).length
      const tokensBefore = await tokens()
      const r = await pcctl(root, ['prep-node', '--no-prompt'])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`Host ${id} is already onboarded and its agent is running; nothing to do\\.`))
      assert.equal(agentPid(root), pid, 'the same agent process')
      assert.ok(alive(pid))
      assert.equal(readFileSync(join(root, 'etc/pcc/agent.json'), 'utf8'), agentJson, 'the host credential is not rotated')
      assert.equal(hostIdOf(root), id)
      assert.equal(await tokens(), tokensBefore, 'no new registration token')
      assert.equal((await hostList()).filter((h) => h.Hostname === 'cli-node-1').length, 1)
    })

    it('authorize-node --role hypervisor warns that it is deprecated; host list shows the role ok', async () => {
      const r = await pcctl(root, ['authorize-node', '--role', 'hypervisor'])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stderr, /^Warning: authorize-node is deprecated: it has no replacement/m)
      assert.match(r.stdout, new RegExp(`Role hypervisor is active on host ${id}\\.`))
      const row = await hostRow(id)
      assert.deepEqual([row?.Roles, row?.['Role Status']], [['hypervisor'], 'ok'])
    })

    it('deauthorize-node -t 1m waits for the agent, printing progress, and removes the role', async () => {
      // With the agent paused the removal cannot converge, so the command must wait (and say so) until it resumes.
      const pid = agentPid(root)
      process.kill(pid, 'SIGSTOP')
      let settled = false
      const run = pcctl(root, ['deauthorize-node', '-t', '1m'])
      void run.then(() => (settled = true))
      try {
        await until('the role removal to start', 10_000, async () => {
          const view = await api(`/resmgr/v1/hosts/${id}`)
          return (view.roles_status_details as Record<string, string>).hypervisor === 'removing' ? true : undefined
        })
        await sleep(1500)
        assert.equal(settled, false, 'deauthorize-node waits while the agent has not removed the role')
      } finally {
        process.kill(pid, 'SIGCONT')
      }
      const r = await run
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stderr, /… removing role hypervisor/)
      assert.match(r.stderr, /… the roles to be removed: hypervisor removing \(\d+s\)/)
      assert.match(r.stderr, /✓ roles removed/)
      assert.match(r.stdout, new RegExp(`Host ${id} has no roles now\\.`))
      assert.deepEqual((await hostRow(id))?.Roles, [])
    })

    it('decommission-node deregisters the host and stops its agent, leaving the host\'s own files', async () => {
      const pid = agentPid(root)
      const r = await pcctl(root, ['decommission-node'])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`Host ${id} is decommissioned\\.`))
      assert.equal(await hostRow(id), undefined, 'host list no longer shows it')
      assert.equal(alive(pid), false, 'the agent process is stopped')
      assert.ok(existsSync(join(root, 'etc/hostname')) && existsSync(join(root, 'etc/os-release')), 'files onboarding did not write are kept')
      assert.equal(existsSync(join(root, 'etc/pcc')), false)
    })
  })

  describe('an admin under multi-factor authentication (rule 7)', () => {
    const seed = randomBytes(20)
    let mfaEnv: Record<string, string>
    let root: string
    const code = () => totpCode(seed, Date.now())
    /** Right codes: the server accepts each once (RFC 6238 §5.2), and the three commands below may run within one 30 s step. */
    const app = new TotpApp(seed)
    /** A code the server must refuse: neither the current nor the previous 30 s step's. */
    const wrongCode = () => {
      const valid = new Set([code(), totpCode(seed, Date.now() - 30_000)])
      for (let n = 0; ; n++) {
        const candidate = String((Number(code()) + 500_000 + n) % 1_000_000).padStart(6, '0')
        if (!valid.has(candidate)) return candidate
      }
    }
    const asMfa = (args: string[]) => pcctl(root, args, mfaEnv)

    before(async () => {
      const call = async (method: string, path: string, body?: unknown) => {
        const headers = { 'x-auth-token': token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }
        const res = await fetch(`${server.url}/identity/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
        const text = await res.text()
        assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`)
        return text ? JSON.parse(text) : undefined
      }
      const options = { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] }
      const { user } = await call('POST', '/users', { user: { name: 'mfa-admin', password: 'mfa-admin-secret', domain_id: 'default', options } })
      const { roles } = await call('GET', '/roles?name=admin')
      await call('PUT', `/projects/${server.bootstrap.adminProjectId}/users/${user.id}/roles/${roles[0].id}`)
      await call('POST', '/credentials', { credential: { type: 'totp', user_id: user.id, blob: base32Encode(seed) } })
      mfaEnv = { OS_USERNAME: 'mfa-admin', OS_PASSWORD: 'mfa-admin-secret' }
      root = stageHostRoot({ hostname: 'mfa-node' })
      roots.push(root)
    })

    it('prep-node without --mfa, or with a wrong code, says Invalid Credentials, exits 1 and changes nothing', async () => {
      const files = snapshot(root)
      const hosts = await hostList()
      for (const args of [['prep-node', '--no-prompt'], ['prep-node', '--no-prompt', '--mfa', wrongCode()]]) {
        const r = await asMfa(args)
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
        assert.match(r.stderr, /Error: Invalid Credentials/)
        noStack(r)
        assert.deepEqual(snapshot(root), files, `${args.join(' ')} left the host as it was`)
        assert.deepEqual(await hostList(), hosts, `${args.join(' ')} registered nothing`)
      }
    })

    it('prep-node with the right --mfa code onboards the host', async () => {
      const r = await asMfa(['prep-node', '--no-prompt', '--mfa', await app.next()])
      assert.equal(r.code, 0, r.stderr)
      assert.equal((await hostRow(hostIdOf(root)))?.Hostname, 'mfa-node')
    })

    it('authorize-node, deauthorize-node and decommission-node without --mfa say Invalid Credentials and change nothing', async () => {
      const id = hostIdOf(root)
      const before = await hostRow(id)
      for (const args of [['authorize-node', '--role', 'hypervisor'], ['deauthorize-node'], ['decommission-node']]) {
        const r = await asMfa(args)
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
        assert.match(r.stderr, /Error: Invalid Credentials/)
        noStack(r)
        assert.deepEqual(await hostRow(id), before, `${args[0]} changed nothing`)
        assert.ok(existsSync(join(root, 'etc/pcc/agent.json')), `${args[0]} removed nothing`)
      }
    })

    it('with --mfa, authorize-node assigns the role and decommission-node removes the host', async () => {
      const id = hostIdOf(root)
      const authorize = await asMfa(['authorize-node', '--role', 'hypervisor', '--mfa', await app.next()])
      assert.equal(authorize.code, 0, authorize.stderr)
      assert.deepEqual((await hostRow(id))?.Roles, ['hypervisor'])
      const decommission = await asMfa(['decommission-node', '--mfa', await app.next()])
      assert.equal(decommission.code, 0, decommission.stderr)
      assert.equal(await hostRow(id), undefined)
    })
  })
})
