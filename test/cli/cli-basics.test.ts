import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { cliSandbox } from '../../src/testkit/cli.js'
import { ADMIN_PASSWORD, freePort, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { renderList, renderShow, rich } from '../../src/cli/output/format.js'

describe('pcctl command line', () => {
  it('lists every command and the global flags in --help', async () => {
    const { code, stdout } = await cliSandbox().run(['--help'])
    assert.equal(code, 0)
    for (const text of ['check-url', 'config set', 'config get', '--log-dir', '--no-prompt', '--verbose', '--insecure']) assert.match(stdout, new RegExp(text))
  })

  it('shows every flag of a command in its help', async () => {
    const { code, stdout } = await cliSandbox().run(['config', 'set', '--help'])
    assert.equal(code, 0)
    for (const flag of ['-u, --account-url', '-p, --password', '-r, --region', '-t, --tenant', '-e, --username', '-l, --proxy-url', '--private-package-repo']) {
      assert.ok(stdout.includes(flag), `help shows ${flag}`)
    }
  })

  it('rejects an unknown command with the nearest match and exit code 2', async () => {
    const { code, stderr } = await cliSandbox().run(['confg', 'get'])
    assert.equal(code, 2)
    assert.match(stderr, /unknown command "confg"/)
    assert.match(stderr, /Did you mean this\?\s+config/)
  })

  it('rejects an unknown flag with the nearest match and exit code 2', async () => {
    const { code, stderr } = await cliSandbox().run(['config', 'set', '--acount-url', 'http://x'])
    assert.equal(code, 2)
    assert.match(stderr, /unknown flag --acount-url for 'config set' \(did you mean --account-url\?\)/)
  })

  it('says which address it could not reach and what to check', async () => {
    const closed = await freePort()
    const { code, stderr } = await cliSandbox().run(['server', 'list'], { OS_AUTH_URL: `http://127.0.0.1:${closed}/identity/v3`, OS_USERNAME: 'u', OS_PASSWORD: 'p' })
    assert.equal(code, 1)
    assert.match(stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${closed}: ECONNREFUSED`))
  })

  it('tells the user to run config set when nothing is configured', async () => {
    const { code, stderr } = await cliSandbox().run(['config', 'get'])
    assert.equal(code, 1)
    assert.match(stderr, /pcctl config set/)
  })

  it('with --no-prompt, names every missing required flag and saves nothing', async () => {
    const sandbox = cliSandbox()
    const { code, stderr } = await sandbox.run(['config', 'set', '--no-prompt', '-u', 'http://127.0.0.1:1'])
    assert.equal(code, 1)
    assert.match(stderr, /missing --username, --password/)
    assert.throws(() => statSync(join(sandbox.configDir, 'config.json')))
  })

  it('explains how to install the openstack client for a passthrough command when it is absent', async () => {
    const sandbox = cliSandbox()
    const { code, stderr } = await sandbox.run(['aggregate', 'list'], { PATH: '/nonexistent', OS_AUTH_URL: 'http://127.0.0.1:1/identity/v3', OS_USERNAME: 'u', OS_PASSWORD: 'p' })
    assert.equal(code, 1)
    assert.match(stderr, /apt-get install python3-openstackclient/)
  })
})

describe('pcctl output formats', () => {
  const headers = ['ID', 'Name', 'Networks']
  const rows = [['a1', 'web', rich('net1=10.0.0.5', { net1: ['10.0.0.5'] })]] as const

  it('prints tables, json with machine values, value and csv as openstackclient does', () => {
    // cliff's value and csv formatters print str() of the machine form, as Python prints a dict.
    assert.equal(renderList(headers, rows.map((r) => [...r]), { format: 'value' }), "a1 web {'net1': ['10.0.0.5']}\n")
    assert.deepEqual(JSON.parse(renderList(headers, rows.map((r) => [...r]), { format: 'json' })), [{ ID: 'a1', Name: 'web', Networks: { net1: ['10.0.0.5'] } }])
    assert.equal(renderList(headers, rows.map((r) => [...r]), { format: 'csv' }), '"ID","Name","Networks"\n"a1","web","{\'net1\': [\'10.0.0.5\']}"\n')
    const table = renderList(headers, rows.map((r) => [...r]))
    assert.match(table, /^\+----\+------\+---------------\+\n\| ID \| Name \| Networks {6}\|/)
  })

  it('selects columns case-insensitively with spaces as underscores, in the command order', () => {
    assert.equal(renderList(['ID', 'Server Name'], [['1', 'x']], { format: 'value', columns: ['server_name', 'id'] }), '1 x\n')
    assert.throws(() => renderList(['ID'], [['1']], { columns: ['nope'] }), /Recognized columns are 'ID'/)
  })

  it('prints None, True and False as Python does, and csv quotes as its QUOTE_NONNUMERIC writer', () => {
    const table = renderList(['Task State', 'Is Public', 'RAM'], [[null, true, 512]])
    assert.match(table, /\| None {7}\| True {6}\| 512 \|/)
    assert.equal(renderList(['Task State', 'Is Public', 'RAM'], [[null, false, 512]], { format: 'value' }), 'None False 512\n')
    assert.equal(renderList(['Task State', 'Is Public', 'RAM', 'Name'], [[null, false, 512, '42']], { format: 'csv' }), '"Task State","Is Public","RAM","Name"\n"",False,512,"42"\n')
    assert.equal(renderList(['ID'], [], { format: 'table' }), '\n', 'an empty list is one empty line, as cliff prints it')
  })

  it('prints shell variables for a show command', () => {
    assert.equal(renderShow([['OS-EXT-STS:power_state', 'Running'], ['id', 'x"y']], { format: 'shell' }), 'os_ext_sts_power_state="Running"\nid="x\\"y"\n')
  })
})

describe('pcctl against a server', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
  })
  after(async () => server.close())

  it('config set proves the account, saves it 0600 with the password encrypted, and config get hides it', async () => {
    const sandbox = cliSandbox()
    const set = await sandbox.run(['config', 'set', '--no-prompt', '-u', server.url, '-e', 'admin', '-p', ADMIN_PASSWORD, '-t', 'admin'])
    assert.equal(set.code, 0, set.stderr)
    const file = join(sandbox.configDir, 'config.json')
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const saved = readFileSync(file, 'utf8')
    assert.ok(!saved.includes(ADMIN_PASSWORD), 'password not stored in clear')
    const get = await sandbox.run(['config', 'get'])
    assert.equal(get.code, 0)
    assert.ok(!get.stdout.includes(ADMIN_PASSWORD))
    assert.match(get.stdout, /\| username\s+\| admin\s+\|/)
    assert.match(get.stdout, /\(saved, hidden\)/)
    const log = readFileSync(join(sandbox.logDir, 'pcctl.log'), 'utf8')
    assert.ok(!log.includes(ADMIN_PASSWORD), 'password not in the log')
  })

  it('config set answers Invalid Credentials for a wrong password and saves nothing', async () => {
    const sandbox = cliSandbox()
    const set = await sandbox.run(['config', 'set', '--no-prompt', '-u', server.url, '-e', 'admin', '-p', 'wrong-password'])
    assert.equal(set.code, 1)
    assert.match(set.stderr, /Invalid Credentials/)
    assert.throws(() => statSync(join(sandbox.configDir, 'config.json')))
  })

  it('config set answers Invalid Region for a region not in the catalog', async () => {
    const sandbox = cliSandbox()
    const set = await sandbox.run(['config', 'set', '--no-prompt', '-u', server.url, '-e', 'admin', '-p', ADMIN_PASSWORD, '-r', 'Mars'])
    assert.equal(set.code, 1)
    assert.match(set.stderr, /Invalid Region: Mars/)
  })

  it('check-url reports reachable and unreachable URLs in a table and fails when any is down', async () => {
    const sandbox = cliSandbox()
    const env = { OS_AUTH_URL: `${server.url}/identity/v3`, OS_USERNAME: 'admin', OS_PASSWORD: ADMIN_PASSWORD, OS_PROJECT_NAME: 'admin' }
    // A private repository on a closed local port stands for an unreachable mirror (no traffic leaves the machine).
    const mirror = `http://127.0.0.1:${await freePort()}/repo`
    const set = await sandbox.run(['config', 'set', '--no-prompt', '-u', server.url, '-e', 'admin', '-p', ADMIN_PASSWORD, '--private-package-repo', mirror])
    assert.equal(set.code, 0, set.stderr)
    const result = await sandbox.run(['check-url'], env)
    assert.equal(result.code, 1)
    assert.match(result.stdout, new RegExp(`${server.url}/compute/v2.1 +\\| compute +\\| OK`))
    assert.match(result.stdout, new RegExp(`${mirror} +\\| package repository +\\| FAIL \\(ECONNREFUSED\\)`))
    assert.match(result.stderr, /expected in air-gapped environments/)
  })
})
