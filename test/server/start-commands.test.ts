/** The start summary's commands: `pcc-server` and `pcctl` only when PATH has them, else what runs from a checkout. */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { findOnPath, pcctlCommand, serverCommand } from '../../src/server/start-commands.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-start-commands-')
after(temp.removeAll)

describe('start summary commands', () => {
  it('name node and the file when neither program is on PATH', () => {
    const empty = temp.make()
    assert.equal(serverCommand('/src/pcc/dist/src/server/main.js', empty), 'node /src/pcc/dist/src/server/main.js')
    const pcctl = pcctlCommand(empty)
    assert.equal(pcctl.onPath, false)
    assert.match(pcctl.command, /^node \/.+\/dist\/(release\/pcctl\.mjs|src\/cli\/main\.js)$/)
  })

  it('name the programs when PATH has them (installed by install.sh or npm link)', () => {
    const bin = temp.make()
    const script = join(temp.make(), 'main.js')
    writeFileSync(script, '')
    symlinkSync(script, join(bin, 'pcc-server'))
    chmodSync(script, 0o755)
    writeFileSync(join(bin, 'pcctl'), '#!/bin/sh\n', { mode: 0o755 })
    const path = `/nonexistent:${bin}`
    assert.equal(serverCommand(script, path), 'pcc-server')
    assert.deepEqual(pcctlCommand(path), { command: 'pcctl', onPath: true })
    // Another pcc-server on PATH is not this one: the summary names this one's file.
    assert.equal(serverCommand('/elsewhere/main.js', path), 'node /elsewhere/main.js')
  })

  it('skips files that are not executable', () => {
    const bin = temp.make()
    writeFileSync(join(bin, 'pcctl'), '', { mode: 0o644 })
    assert.equal(findOnPath('pcctl', bin), undefined)
  })
})
