import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../src/server/config/load.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-config-')
after(temp.removeAll)

describe('configuration', () => {
  it('uses the embedded defaults when nothing is set', () => {
    const config = loadConfig({ argv: [], env: {} })
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 8080 })
    assert.equal(config.publicUrl, 'http://127.0.0.1:8080')
    assert.equal(config.dataDir, './data')
    assert.equal(config.databaseUrl, '')
    assert.equal(config.simulatedHosts, 3)
    assert.deepEqual(config.tls, { mode: 'off' })
    assert.equal(config.adminPassword, undefined)
  })

  it('takes flags over environment over config file', () => {
    const dir = temp.make()
    const file = join(dir, 'pcc.json')
    writeFileSync(file, JSON.stringify({ simulatedHosts: 7, logLevel: 'debug', dataDir: '/from/file' }))
    const config = loadConfig({
      argv: ['--simulated-hosts', '5', '--config', file],
      env: { PCC_SIMULATED_HOSTS: '6', PCC_LOG_LEVEL: 'warn' },
    })
    assert.equal(config.simulatedHosts, 5, 'flag wins')
    assert.equal(config.logLevel, 'warn', 'environment beats the file')
    assert.equal(config.dataDir, '/from/file', 'file beats the default')
  })

  it('derives the public URL from the listen address and TLS mode', () => {
    assert.equal(loadConfig({ argv: ['--listen=0.0.0.0:9000'], env: {} }).publicUrl, 'http://127.0.0.1:9000')
    assert.equal(loadConfig({ argv: [], env: { PCC_LISTEN: '127.0.0.1:8443', PCC_TLS: 'auto' } }).publicUrl, 'https://127.0.0.1:8443')
    assert.equal(loadConfig({ argv: [], env: { PCC_PUBLIC_URL: 'https://cloud.example.com/' } }).publicUrl, 'https://cloud.example.com')
  })

  const invalid: [string, { argv?: string[]; env?: Record<string, string> }, RegExp][] = [
    ['an unknown environment setting', { env: { PCC_SIMULATED_HOST: '2' } }, /unknown environment setting PCC_SIMULATED_HOST/],
    ['an unknown flag', { argv: ['--listn', 'x'] }, /unknown option --listn/],
    ['a flag without value', { argv: ['--listen'] }, /--listen needs a value/],
    ['a bad listen address', { env: { PCC_LISTEN: 'nowhere' } }, /PCC_LISTEN.*HOST:PORT/],
    ['a port out of range', { env: { PCC_LISTEN: '127.0.0.1:70000' } }, /PCC_LISTEN.*above 65535/],
    ['a negative host count', { env: { PCC_SIMULATED_HOSTS: '-1' } }, /PCC_SIMULATED_HOSTS/],
    ['a non-postgres database URL', { env: { PCC_DATABASE_URL: 'mysql://x' } }, /PCC_DATABASE_URL.*postgres/],
    ['a bad TLS mode', { env: { PCC_TLS: 'maybe' } }, /PCC_TLS/],
    ['a bad log level', { env: { PCC_LOG_LEVEL: 'loud' } }, /PCC_LOG_LEVEL.*one of/],
    ['a short admin password', { env: { PCC_ADMIN_PASSWORD: 'short' } }, /PCC_ADMIN_PASSWORD.*8 characters/],
    ['a missing config file', { env: { PCC_CONFIG: '/nonexistent/pcc.json' } }, /cannot be read: ENOENT/],
    ['a console origin that is not a host name', { env: { PCC_CONSOLE_ALLOWED_ORIGINS: 'ok.example, http://x/y' } }, /PCC_CONSOLE_ALLOWED_ORIGINS.*host names/],
    ['an advertise URL that is not one', { env: { PCC_ADVERTISE_URL: 'app1:8080' } }, /PCC_ADVERTISE_URL.*URL/],
    ['a negative console token lifetime', { env: { PCC_CONSOLE_TOKEN_TTL_SECONDS: '-5' } }, /PCC_CONSOLE_TOKEN_TTL_SECONDS/],
    ['physical interfaces without a local hypervisor', { env: { PCC_LOCAL_PHYSICAL_INTERFACES: 'public:eth1' } }, /PCC_LOCAL_PHYSICAL_INTERFACES .* needs PCC_LOCAL_HYPERVISOR=qemu/],
  ]
  for (const [what, sources, message] of invalid) {
    it(`rejects ${what} with a message naming the setting`, () => {
      assert.throws(() => loadConfig({ argv: sources.argv ?? [], env: sources.env ?? {} }), (err: Error) => err.name === 'ConfigError' && message.test(err.message))
    })
  }

  it('reads the console settings: token lifetime, allowed origins (list or JSON array), idle limit, advertise URL', () => {
    const defaults = loadConfig({ argv: [], env: {} })
    assert.equal(defaults.consoleTokenTtlSeconds, 600)
    assert.deepEqual(defaults.consoleAllowedOrigins, [])
    assert.equal(defaults.consoleIdleSeconds, 3600)
    assert.equal(defaults.advertiseUrl, undefined)
    const set = loadConfig({ argv: [], env: { PCC_CONSOLE_ALLOWED_ORIGINS: ' Console.Example ,[::1], 10.0.0.5', PCC_ADVERTISE_URL: 'http://app1.internal:8080/', PCC_CONSOLE_IDLE_SECONDS: '0' } })
    assert.deepEqual(set.consoleAllowedOrigins, ['console.example', '[::1]', '10.0.0.5'])
    assert.equal(set.advertiseUrl, 'http://app1.internal:8080')
    assert.equal(set.consoleIdleSeconds, 0)
    const dir = temp.make()
    const file = join(dir, 'pcc.json')
    writeFileSync(file, JSON.stringify({ consoleAllowedOrigins: ['a.example', 'b.example'] }))
    assert.deepEqual(loadConfig({ argv: ['--config', file], env: {} }).consoleAllowedOrigins, ['a.example', 'b.example'])
  })

  it('rejects unknown keys and bad JSON in the config file', () => {
    const dir = temp.make()
    const unknown = join(dir, 'unknown.json')
    writeFileSync(unknown, '{"simulatedHost": 2}')
    assert.throws(() => loadConfig({ argv: ['--config', unknown], env: {} }), /unknown setting "simulatedHost"/)
    const broken = join(dir, 'broken.json')
    writeFileSync(broken, '{simulatedHosts: 2')
    assert.throws(() => loadConfig({ argv: ['--config', broken], env: {} }), /not valid JSON/)
  })
})
