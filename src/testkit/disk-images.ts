/**
 * Small disk images for tests, made by QEMU's own qemu-img: a qcow2 of a given virtual size, optionally with a
 * byte pattern written at an offset, so a volume made from it can be checked byte for byte.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function qcow2Image(virtualBytes: number, fill?: { offset: number; length: number; byte: number }): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-test-image-'))
  try {
    const path = join(dir, 'image.qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path, String(virtualBytes)])
    if (fill) execFileSync('qemu-io', ['-f', 'qcow2', path, '-c', `write -P ${fill.byte} ${fill.offset} ${fill.length}`], { stdio: 'ignore' })
    return readFileSync(path)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
