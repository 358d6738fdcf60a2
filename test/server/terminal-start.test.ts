/**
 * The operator's first minutes, met as in a terminal: a start with the readable summary (PCC_TERMINAL=on, what a
 * TTY gets) shows the URL, the admin user and the once-only password on the first screen, with how to recover it,
 * and keeps the JSON log in a file; the local recovery commands (`pcc-server reset-password`, `unlock-user`) work on
 * a stopped server's data dir without a token, and the next start logs in with what they set.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { freePort } from '../../src/testkit/harness.js'
import { spawnServer, type ServerProcess } from '../../src/testkit/process.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-terminal-')
after(temp.removeAll)

/** A terminal's first screen. */
const SCREEN_LINES = 24

async function login(url: string, password: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/identity/v3/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } } } }),
  })
  return { status: res.status, text: await res.text() }
}

async function start(dataDir: string, env: Record<string, string> = {}): Promise<{ server: ServerProcess; url: string }> {
  const port = await freePort()
  const server = spawnServer({ PCC_DATA_DIR: dataDir, PCC_LISTEN: `127.0.0.1:${port}`, PCC_SIMULATED_HOSTS: '1', ...env })
  const url = await server.listening(90_000)
  return { server, url }
}

/** Runs a local command of pcc-server to its end. */
async function command(args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const run = spawnServer({}, args)
  const code = await run.exited()
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

describe('pcc-server in a terminal', () => {
  const dataDir = temp.make()
  let password = ''

  it('prints a readable summary with the once-only password on the first screen and keeps the JSON log in a file', async () => {
    // A fresh clone's shell: node on PATH, neither pcc-server nor pcctl.
    const path = `${dirname(process.execPath)}:/usr/bin:/bin`
    const { server, url } = await start(dataDir, { PCC_TERMINAL: 'on', PATH: path })
    try {
      // Requests log a line each: they go to the file, not between the operator and the password.
      for (let i = 0; i < 30; i++) await fetch(`${url}/healthz`)
      const screen = server.stdout().split('\n').slice(0, SCREEN_LINES).join('\n')
      const match = /^ {2}export OS_PASSWORD=(\S+)$/m.exec(screen)
      assert.ok(match, `the password on the first screen:\n${screen}`)
      password = match[1]
      assert.match(screen, new RegExp(`pcc is running at ${url}`))
      assert.match(screen, /export OS_USERNAME=admin/)
      // Every command it prints runs as printed, in that shell.
      const runs = (command: string) => execFileSync('/bin/sh', ['-c', command], { env: { PATH: path }, encoding: 'utf8' })
      const recovery = new RegExp(`with no token: (.+) reset-password admin --data-dir ${dataDir} `).exec(screen)
      assert.ok(recovery, `how to recover the password:\n${screen}`)
      assert.match(runs(`${recovery[1]} reset-password --help`), /Usage: pcc-server reset-password USER/)
      const pcctl = /\(or: (.+) server list\)/.exec(screen)
      assert.ok(pcctl && pcctl[1] !== 'pcctl', `pcctl as it runs here:\n${screen}`)
      assert.match(runs(`${pcctl[1]} --version`), /\d+\.\d+/)
      assert.ok(screen.includes(`To put pcctl on PATH: curl -fsSL ${url}/downloads/install.sh | sudo bash`), `how to put pcctl on PATH:\n${screen}`)
      assert.doesNotMatch(server.stdout(), /^\{"level"/m, 'no JSON log lines on the terminal')
      const logFile = join(dataDir, 'log/pcc-server.log')
      assert.match(screen, new RegExp(`Log \\(JSON\\): ${logFile}`))
      await new Promise((r) => setTimeout(r, 500))
      const log = readFileSync(logFile, 'utf8')
      assert.match(log, /"url":"\/healthz"/, 'the request log is in the file')
      assert.ok(!log.includes(password), 'no password in the log')
      assert.equal((await login(url, password)).status, 201)
    } finally {
      assert.equal(await server.stop('SIGTERM'), 0)
    }
  })

  it('keeps the JSON log on stdout when off (services, pipes)', async () => {
    const { server } = await start(temp.make(), { PCC_TERMINAL: 'off' })
    await server.stop('SIGTERM')
    assert.match(server.stdout(), /^\{"level":30/m)
  })

  it('resets a password on the stopped server\'s data dir, with no token, and the next start logs in with it', async () => {
    assert.ok(password, 'the first start gave a password')
    const reset = await command(['reset-password', 'admin', '--data-dir', dataDir])
    assert.equal(reset.code, 0, reset.stderr)
    const fresh = /new password: (\S+)/.exec(reset.stdout)?.[1]
    assert.ok(fresh && fresh !== password, reset.stdout)
    const chosen = await command(['reset-password', 'admin', '--data-dir', dataDir, '--password', 'chosen-by-the-operator'])
    assert.equal(chosen.code, 0, chosen.stderr)
    assert.doesNotMatch(chosen.stdout, /chosen-by-the-operator/, 'a given password is not echoed')

    const { server, url } = await start(dataDir, { PCC_TERMINAL: 'off' })
    try {
      assert.doesNotMatch(server.stdout(), /OS_PASSWORD=/, 'no new bootstrap password: the admin exists')
      assert.equal((await login(url, 'chosen-by-the-operator')).status, 201)
      assert.equal((await login(url, password)).status, 401, 'the old password no longer works')
      assert.equal((await login(url, fresh)).status, 401, 'nor the one set before')
    } finally {
      await server.stop('SIGTERM')
    }
  })

  it('unlocks a locked-out admin on the data dir', async () => {
    const env = { PCC_TERMINAL: 'off', PCC_LOCKOUT_FAILURE_ATTEMPTS: '2', PCC_LOCKOUT_DURATION_SECONDS: '3600' }
    let { server, url } = await start(dataDir, env)
    try {
      for (let i = 0; i < 2; i++) assert.equal((await login(url, 'a wrong guess')).status, 401)
      const locked = await login(url, 'chosen-by-the-operator')
      assert.equal(locked.status, 401)
      assert.match(locked.text, /locked/)
    } finally {
      await server.stop('SIGTERM')
    }
    const unlock = await command(['unlock-user', 'admin', '--data-dir', dataDir])
    assert.equal(unlock.code, 0, unlock.stderr)
    assert.match(unlock.stdout, /admin \([0-9a-f]+\) is unlocked \(2 failed logins cleared\)/)
    ;({ server, url } = await start(dataDir, env))
    try {
      assert.equal((await login(url, 'chosen-by-the-operator')).status, 201)
    } finally {
      await server.stop('SIGTERM')
    }
  })

  it('refuses what it cannot do in one line, exit 2, changing nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['reset-password', 'nobody', '--data-dir', dataDir], /no user nobody in domain Default/],
      [['reset-password', 'admin', '--domain', 'Elsewhere', '--data-dir', dataDir], /no domain Elsewhere/],
      [['reset-password', 'admin', '--password', 'short', '--data-dir', dataDir], /at least 8 characters/],
      [['reset-password', '--data-dir', dataDir], /usage: pcc-server reset-password USER/],
      [['unlock-user', 'admin', '--data-dir', join(dataDir, 'none')], /no pcc database in/],
      [['unlock-user', 'admin', '--no-such-option', 'x'], /unknown option --no-such-option/],
    ]
    for (const [args, pattern] of cases) {
      const r = await command(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      const lines = r.stderr.split('\n').filter(Boolean)
      assert.equal(lines.length, 1, r.stderr)
      assert.match(lines[0], /^pcc-server: error: /)
      assert.match(lines[0], pattern)
    }
    assert.ok(!existsSync(join(dataDir, 'none')), 'no database was made where there was none')
  })
})
