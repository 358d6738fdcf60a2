import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { deviceMapperAvailable, LvmBackend } from '../../../src/host/storage/lvm/lvm-backend.js'
import { volumeBackendConformance } from '../../../src/host/storage/conformance/suite.js'

/**
 * A volume group of its own on a loop device over a sparse 8 GiB file, so the test touches no disk of the
 * machine. Skipped, naming what is missing, where the kernel has no device-mapper or LVM is not installed.
 */
volumeBackendConformance('lvm', async () => {
  try {
    execFileSync('vgs', ['--version'], { stdio: 'ignore' })
  } catch {
    return 'LVM is not installed (no vgs; Debian package lvm2)'
  }
  const dm = await deviceMapperAvailable().then(() => undefined, (err: Error) => err.message)
  if (dm) return `${dm}, so LVM cannot run here`
  const dir = mkdtempSync(join(tmpdir(), 'pcc-lvm-backend-'))
  const file = join(dir, 'pv.img')
  const vg = `pcc-test-${randomBytes(3).toString('hex')}`
  execFileSync('truncate', ['-s', '8G', file])
  const loop = execFileSync('losetup', ['--find', '--show', file], { encoding: 'utf8' }).trim()
  const cleanup = async () => {
    try {
      execFileSync('vgremove', ['--yes', '--force', vg], { stdio: 'ignore' })
    } catch {
      // not created
    }
    try {
      execFileSync('pvremove', ['--yes', loop], { stdio: 'ignore' })
    } catch {
      // not created
    }
    execFileSync('losetup', ['-d', loop])
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    execFileSync('pvcreate', ['--yes', loop], { stdio: 'ignore' })
    execFileSync('vgcreate', [vg, loop], { stdio: 'ignore' })
  } catch (err) {
    await cleanup()
    throw err
  }
  return { backend: new LvmBackend(vg), cleanup }
})
