/**
 * `npm start`'s build (scripts/build-start.mjs), run as `npm start` runs it, in a copy of the checkout: the first
 * start builds, a second with nothing changed skips the build (a restart was 19–25 s of building under load), an
 * edited source builds again, and two starts at once both succeed with one complete web console (they failed with
 * ENOTEMPTY on dist/web).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = process.cwd()

function buildStart(cwd: string): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, ['scripts/build-start.mjs'], { cwd, timeout: 240_000 }, (err, _stdout, stderr) => done({ code: err ? Number(err.code) || 1 : 0, stderr }))
  })
}

describe('npm start builds only what changed, one start at a time', { timeout: 900_000 }, () => {
  let clone: string
  before(() => {
    clone = mkdtempSync(join(tmpdir(), 'pcc-build-start-'))
    for (const path of ['src', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json']) cpSync(join(ROOT, path), join(clone, path), { recursive: true, preserveTimestamps: true })
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'))
  })
  after(() => {
    if (clone) rmSync(clone, { recursive: true, force: true })
  })

  const server = () => join(clone, 'dist/src/server/main.js')

  it('builds on the first start and skips the build when nothing changed', async () => {
    const first = await buildStart(clone)
    assert.equal(first.code, 0, first.stderr)
    assert.ok(existsSync(server()))
    assert.ok(existsSync(join(clone, 'dist/web/index.html')))
    assert.ok(existsSync(join(clone, 'dist/release/pcctl.mjs')))
    const built = statSync(server()).mtimeMs
    const again = await buildStart(clone)
    assert.equal(again.code, 0, again.stderr)
    assert.equal(statSync(server()).mtimeMs, built, 'nothing was compiled again')
  })

  it('builds again after a source changes', async () => {
    const built = statSync(server()).mtimeMs
    const later = new Date(Date.now() + 2000)
    utimesSync(join(clone, 'src/server/main.ts'), later, later)
    const run = await buildStart(clone)
    assert.equal(run.code, 0, run.stderr)
    assert.ok(statSync(server()).mtimeMs > built, 'the server was compiled again')
  })

  it('lets two starts at once both succeed, leaving one complete web console', async () => {
    rmSync(join(clone, 'dist/.start-build'))
    const [a, b] = await Promise.all([buildStart(clone), buildStart(clone)])
    assert.equal(a.code, 0, a.stderr)
    assert.equal(b.code, 0, b.stderr)
    assert.ok(existsSync(join(clone, 'dist/web/index.html')))
    assert.deepEqual(readdirSync(join(clone, 'dist')).filter((name) => name.startsWith('web.') || name.endsWith('.lock')), [], 'no temporary tree or lock is left')
  })

  it('builds the web console beside dist/web, so two web builds at once never remove each other\'s files', async () => {
    const runs = await Promise.all([0, 1].map(() => new Promise<number>((done) => execFile(process.execPath, ['scripts/build-web.mjs'], { cwd: clone, timeout: 240_000 }, (err) => done(err ? 1 : 0)))))
    assert.deepEqual(runs, [0, 0])
    assert.ok(existsSync(join(clone, 'dist/web/index.html')))
    assert.deepEqual(readdirSync(join(clone, 'dist')).filter((name) => name.startsWith('web.')), [])
  })
})
