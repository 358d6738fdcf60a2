/**
 * The config drive: an ISO 9660 image with volume id `config-2` (Joliet + Rock Ridge, as Nova's genisoimage call
 * makes it) holding the files the metadata module laid out (openstack/<version>/meta_data.json, user_data, …).
 * cloud-init and the pcc guest image find it by its label.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { promisify } from 'node:util'
import { DriverError } from '../../../contracts/host/compute-driver.js'

const run = promisify(execFile)

/** Writes the ISO at `target` from `files` (path inside the drive → content). */
export async function writeConfigDrive(target: string, files: Record<string, string | Buffer>): Promise<void> {
  const stage = mkdtempSync(join(dirname(target), '.config-drive-'))
  try {
    for (const [path, content] of Object.entries(files)) {
      const rel = normalize(path).replace(/^\/+/, '')
      if (rel.startsWith('..')) throw new DriverError(`config drive path ${path} leaves the drive`)
      mkdirSync(dirname(join(stage, rel)), { recursive: true })
      writeFileSync(join(stage, rel), content)
    }
    await run('genisoimage', ['-quiet', '-o', target, '-V', 'config-2', '-J', '-r', '-input-charset', 'utf-8', stage]).catch((err: NodeJS.ErrnoException & { stderr?: string }) => {
      throw new DriverError(err.code === 'ENOENT' ? 'genisoimage is not installed on this host: the config drive cannot be made (install genisoimage)' : `genisoimage failed: ${(err.stderr ?? err.message).trim()}`)
    })
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}
