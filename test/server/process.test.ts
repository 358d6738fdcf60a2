/**
 * The pcc-server process itself (dist/src/server/main.js): failures an operator can cause end in one clear
 * line and a non-zero exit; a restart keeps the data; /readyz is 200 soon after start; SIGTERM lets in-flight
 * requests finish; PCC_TLS=auto serves HTTPS that the printed CA verifies.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { connect, createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { verifyPassword } from '../../src/server/crypto/passwords.js'
import { openStore } from '../../src/server/storage/store.js'
import { SqlTaskQueue } from '../../src/server/tasks/sql-queue.js'
import { DIALECTS, freePort } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { spawnServer, SERVER_MAIN } from '../../src/testkit/process.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-proc-')
const tempDir = temp.make
after(temp.removeAll)

async function waitReady(url: string, timeoutMs: number): Promise<number> {
  const start = Date.now()
  for (;;) {
    const status = await fetch(`${url}/readyz`).then((r) => r.status, () => 0)
    if (status === 200) return Date.now() - start
    if (Date.now() - start > timeoutMs) throw new Error(`/readyz not 200 within ${timeoutMs} ms (last ${status})`)
    await sleep(50)
  }
}

/** A port that something else already listens on, for the EADDRINUSE case. */
async function occupiedPort(): Promise<{ port: number; close(): void }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, close: () => server.close() }
}

/** Whether this machine lets us make a read-only bind mount in a private mount namespace (root with CAP_SYS_ADMIN). */
function canMountReadOnly(): boolean {
  try {
    const dir = tempDir()
    execFileSync('unshare', ['-m', 'sh', '-c', `mount --bind ${dir} ${dir} && mount -o remount,ro,bind ${dir}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

function assertOneErrorLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.split('\n').filter((l) => l !== '')
  assert.equal(lines.length, 1, `expected exactly one line on stderr, got:\n${stderr}`)
  assert.match(lines[0], /^pcc-server: error: \S/)
  assert.match(lines[0], pattern)
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace')
}

describe('pcc-server process: start-up failures', () => {
  const cases: [string, () => Promise<{ env: Record<string, string>; command?: string[]; cleanup?: () => void }>, RegExp, number?][] = [
    ['an invalid setting', async () => ({ env: { PCC_LISTEN: 'nowhere' } }), /invalid PCC_LISTEN: expected HOST:PORT/, 2],
    ['an unknown setting', async () => ({ env: { PCC_DATADIR: '/tmp/x' } }), /unknown environment setting PCC_DATADIR/, 2],
    ['an unknown flag', async () => ({ env: {}, command: [process.execPath, SERVER_MAIN, '--data-dri', '/tmp/x'] }), /unknown option --data-dri/, 2],
    [
      'a corrupt data dir (garbage in pcc.sqlite)',
      async () => {
        const dir = tempDir()
        writeFileSync(join(dir, 'pcc.sqlite'), 'this is not a database, just some bytes '.repeat(100))
        return { env: { PCC_DATA_DIR: dir, PCC_LISTEN: '127.0.0.1:0' } }
      },
      /cannot open the SQLite database .*pcc\.sqlite: file is not a database/,
    ],
    [
      'a data dir below a regular file',
      async () => {
        const file = join(tempDir(), 'a-file')
        writeFileSync(file, 'x')
        return { env: { PCC_DATA_DIR: join(file, 'data'), PCC_LISTEN: '127.0.0.1:0' } }
      },
      /data directory .*a-file\/data cannot be created: a part of the path is a file, not a directory \(ENOTDIR\)/,
    ],
    [
      'a data dir that is a regular file',
      async () => {
        const file = join(tempDir(), 'a-file')
        writeFileSync(file, 'x')
        return { env: { PCC_DATA_DIR: file, PCC_LISTEN: '127.0.0.1:0' } }
      },
      /data directory .*a-file (cannot be created|is not writable): it exists and is not a directory/,
    ],
    [
      'an unreachable database',
      // A port nothing listens on (127.0.0.1:1 may be taken on some machines).
      async () => ({ env: { PCC_DATABASE_URL: `postgres://pcc:hunter22@127.0.0.1:${await freePort()}/x`, PCC_LISTEN: '127.0.0.1:0', PCC_DATA_DIR: tempDir() } }),
      /cannot reach the PostgreSQL database postgres:\/\/pcc:\*\*\*@127\.0\.0\.1:\d+\/x: .*ECONNREFUSED/,
    ],
    [
      'a port already in use',
      async () => {
        const taken = await occupiedPort()
        return { env: { PCC_LISTEN: `127.0.0.1:${taken.port}`, PCC_DATA_DIR: tempDir(), PCC_ADMIN_PASSWORD: 'admin-password-1' }, cleanup: taken.close }
      },
      /cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/,
    ],
    [
      'a master key that does not open the database',
      async () => {
        const dir = tempDir()
        const first = spawnServer({ PCC_DATA_DIR: dir, PCC_LISTEN: '127.0.0.1:0', PCC_ADMIN_PASSWORD: 'admin-password-1' })
        await first.listening()
        assert.equal(await first.stop(), 0)
      assert.equal(first.stderr(), '', 'a normal start and stop write nothing to stderr (no warnings)')
        return { env: { PCC_DATA_DIR: dir, PCC_LISTEN: '127.0.0.1:0', PCC_MASTER_KEY: Buffer.alloc(32, 7).toString('base64') } }
      },
      /the master key does not match this database/,
    ],
  ]
  for (const [what, setup, message, code] of cases) {
    it(`stops on ${what} with one clear line and a non-zero exit`, async () => {
      const { env, command, cleanup } = await setup()
      try {
        const server = spawnServer(env, [], { command })
        const exit = await Promise.race([server.exited(), sleep(20_000).then(() => 'still running')])
        if (exit === 'still running') await server.stop('SIGKILL')
        assert.equal(exit, code ?? 1, `exit code; stderr: ${server.stderr()}`)
        assertOneErrorLine(server.stderr(), message)
        assert.doesNotMatch(server.stderr() + server.stdout(), /hunter22/, 'the database password is not shown')
      } finally {
        cleanup?.()
      }
    })
  }

  it('stops on a read-only data dir with one clear line', { skip: canMountReadOnly() ? false : 'needs root with CAP_SYS_ADMIN for a read-only bind mount' }, async () => {
    const dir = tempDir()
    const script = `mount --bind ${dir} ${dir} && mount -o remount,ro,bind ${dir} && exec "$0" "$1"`
    const server = spawnServer({ PCC_DATA_DIR: dir, PCC_LISTEN: '127.0.0.1:0' }, [], { command: ['unshare', '-m', 'sh', '-c', script, process.execPath, SERVER_MAIN] })
    assert.equal(await server.exited(), 1)
    assertOneErrorLine(server.stderr(), /data directory .* is not writable: read-only file system \(EROFS\)/)
  })
})

for (const dialect of DIALECTS) {
  describe(`pcc-server process: restart and readiness (${dialect})`, () => {
    it('is ready within 15 s, prints the generated admin password once, and keeps every row across a restart', async () => {
      const dataDir = tempDir()
      const databaseUrl = dialect === 'postgres' ? await freshDatabase() : ''
      const env = { PCC_DATA_DIR: dataDir, PCC_DATABASE_URL: databaseUrl, PCC_LISTEN: '127.0.0.1:0', PCC_LOG_LEVEL: 'warn' }
      const started = Date.now()
      const first = spawnServer(env)
      const url = await first.listening()
      await waitReady(url, 15_000 - (Date.now() - started))
      const password = /OS_PASSWORD=(\S+)/.exec(first.stdout())?.[1]
      assert.ok(password && password.length >= 16, `a generated password is printed on first start:\n${first.stdout()}`)
      assert.match(first.stdout(), /export OS_AUTH_URL=http:\/\/127\.0\.0\.1:0\/identity\/v3/)

      // Rows written while the server runs, through the same store it uses (another process's connection).
      const store = await openStore({ dataDir, databaseUrl })
      await store.db.insertInto('pcc_meta').values({ key: 'written-before-restart', value: 'still here' }).execute()
      const task = await new SqlTaskQueue(store, { leaseMs: 30_000 }).enqueue({ kind: 'restart-probe', payload: { n: 42 } })
      await store.close()
      assert.equal(await first.stop(), 0)

      const second = spawnServer(env)
      await waitReady(await second.listening(), 15_000)
      assert.doesNotMatch(second.stdout(), /OS_PASSWORD/, 'the password is printed only on the first start')
      assert.equal(await second.stop(), 0)

      const after = await openStore({ dataDir, databaseUrl })
      try {
        const meta = await after.db.selectFrom('pcc_meta').select('value').where('key', '=', 'written-before-restart').executeTakeFirst()
        assert.equal(meta?.value, 'still here')
        const kept = await new SqlTaskQueue(after, { leaseMs: 30_000 }).get(task.id)
        assert.deepEqual(kept?.payload, { n: 42 })
        assert.equal(kept?.status, 'queued')
        const admins = await after.db.selectFrom('users').select('password_hash').where('name', '=', 'admin').execute()
        assert.equal(admins.length, 1)
        assert.equal(await verifyPassword(password, admins[0].password_hash!), true, 'the printed password is the admin password')
      } finally {
        await after.close()
      }
    })
  })
}

describe('pcc-server process: graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the request in flight, and exits 0', async () => {
    const server = spawnServer({ PCC_DATA_DIR: tempDir(), PCC_LISTEN: '127.0.0.1:0', PCC_ADMIN_PASSWORD: 'admin-password-1', PCC_LOG_LEVEL: 'warn' })
    const url = new URL(await server.listening())
    await waitReady(url.origin, 15_000)
    // A request whose body is still arriving when the signal comes.
    const body = JSON.stringify({ auth: { identity: { methods: ['password'] } } })
    const socket = connect(Number(url.port), url.hostname)
    await new Promise<void>((resolve) => socket.once('connect', resolve))
    let response = ''
    socket.on('data', (d: Buffer) => (response += d))
    const closed = new Promise<void>((resolve) => socket.once('close', resolve))
    socket.write(`POST /identity/v3/auth/tokens HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
    await sleep(300)
    server.child.kill('SIGTERM')
    await sleep(500)
    assert.equal(server.child.exitCode, null, 'the process waits for the request in flight')
    const refused = await fetch(`${url.origin}/healthz`).then(
      () => false,
      () => true,
    )
    assert.ok(refused, 'no new connections are accepted once SIGTERM arrived')
    socket.write(body.slice(10))
    const answered = Date.now()
    await closed
    assert.ok(Date.now() - answered < 5000, 'the connection closes after its answer instead of idling out')
    assert.match(response, /^HTTP\/1\.1 \d{3} /, `the request in flight got its answer: ${response}`)
    assert.match(response, /x-openstack-request-id: req-/i)
    assert.equal(await server.exited(), 0)
  })
})

describe('pcc-server process: PCC_TLS=auto', () => {
  it('serves HTTPS that the printed CA certificate verifies, and only that', async () => {
    const dataDir = tempDir()
    const server = spawnServer({ PCC_DATA_DIR: dataDir, PCC_LISTEN: '127.0.0.1:0', PCC_TLS: 'auto', PCC_ADMIN_PASSWORD: 'admin-password-1', PCC_LOG_LEVEL: 'warn' })
    try {
      const url = new URL(await server.listening())
      assert.equal(url.protocol, 'https:')
      const caFile = /trust the generated CA certificate at (\S+)/.exec(server.stdout())?.[1]
      assert.ok(caFile, `the CA file is printed:\n${server.stdout()}`)
      assert.equal(caFile, join(dataDir, 'tls', 'ca.crt'))
      const ca = readFileSync(caFile)
      const get = (options: { ca?: Buffer; path?: string }) =>
        new Promise<{ status: number; body: string; hsts: string | undefined }>((resolve, reject) => {
          const req = httpsRequest({ host: url.hostname, port: url.port, path: options.path ?? '/healthz', ca: options.ca }, (res) => {
            let body = ''
            res.on('data', (d: Buffer) => (body += d))
            res.on('end', () => resolve({ status: res.statusCode!, body, hsts: res.headers['strict-transport-security'] }))
          })
          req.on('error', reject)
          req.end()
        })
      const verified = await get({ ca })
      assert.equal(verified.status, 200)
      assert.deepEqual(JSON.parse(verified.body), { status: 'ok' })
      // Every answer under TLS tells browsers to keep to HTTPS: the web console, the APIs, their errors.
      assert.equal(verified.hsts, 'max-age=31536000')
      for (const path of ['/', '/identity/v3', '/compute/v2.1/servers', '/no-such-path']) assert.equal((await get({ ca, path })).hsts, 'max-age=31536000', path)
      await assert.rejects(get({}), (err: NodeJS.ErrnoException) => /CERT|SELF_SIGNED|UNABLE_TO/.test(err.code ?? ''))
    } finally {
      assert.equal(await server.stop(), 0)
    }
    // The same CA is reused on the next start, so clients configured once keep working.
    const ca = readFileSync(join(dataDir, 'tls', 'ca.crt'), 'utf8')
    const again = spawnServer({ PCC_DATA_DIR: dataDir, PCC_LISTEN: '127.0.0.1:0', PCC_TLS: 'auto', PCC_LOG_LEVEL: 'warn' })
    await again.listening()
    assert.equal(await again.stop(), 0)
    assert.equal(readFileSync(join(dataDir, 'tls', 'ca.crt'), 'utf8'), ca)
  })
})
