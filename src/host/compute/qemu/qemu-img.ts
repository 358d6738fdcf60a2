/**
 * qemu-img and the few other disk tools the driver runs, each with the format named explicitly (`-f`, `-F`): the
 * tools never probe a user's image. Failures become DriverErrors that quote the tool, so a server's fault says what
 * happened ("No space left on device", "Image is not in qcow2 format").
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { DriverError } from '../../../contracts/host/compute-driver.js'

const run = promisify(execFile)

export async function tool(cmd: string, args: string[], what: string): Promise<string> {
  try {
    return (await run(cmd, args, { maxBuffer: 16 * 1024 * 1024 })).stdout
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string }
    if (e.code === 'ENOENT') throw new DriverError(`${cmd} is not installed on this host: ${what} is not possible`)
    const said = (e.stderr || e.message).trim().replace(/^qemu-img: /, '')
    throw new DriverError(`${what} failed: ${said}`)
  }
}

export const qemuImg = {
  /** `-U`: the image may be open in a running QEMU; sizes and formats read without its lock are still right. */
  async info(file: string, format: string): Promise<Record<string, unknown>> {
    return JSON.parse(await tool('qemu-img', ['info', '-U', '-f', format, '--output=json', file], `reading ${file}`)) as Record<string, unknown>
  },

  /** A qcow2 overlay on `backing` (of format `backingFormat`), `size` bytes (undefined: the backing's size). */
  async overlay(file: string, backing: string, backingFormat: string, size?: number): Promise<void> {
    await tool('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', backingFormat, '-b', backing, file, ...(size !== undefined ? [String(size)] : [])], `creating disk ${file}`)
  },

  async blank(file: string, format: 'qcow2' | 'raw', size: number): Promise<void> {
    await tool('qemu-img', ['create', '-q', '-f', format, file, String(size)], `creating disk ${file}`)
  },

  async resize(file: string, format: string, size: number): Promise<void> {
    await tool('qemu-img', ['resize', '-q', '-f', format, file, String(size)], `resizing disk ${file}`)
  },

  /** A standalone copy (backing chain flattened). `-U`: the source may be open in a running QEMU (read only). */
  async convert(from: string, fromFormat: string, to: string, toFormat: string, options: { compress?: boolean; shareLock?: boolean } = {}): Promise<void> {
    const args = ['convert', ...(options.shareLock ? ['-U'] : []), '-f', fromFormat, '-O', toFormat, ...(options.compress ? ['-c'] : []), from, to]
    await tool('qemu-img', args, `copying disk ${from}`)
  },

  /** Points an overlay at a new path of the same backing data (after the disk moved hosts). */
  async rebase(file: string, backing: string, backingFormat: string): Promise<void> {
    await tool('qemu-img', ['rebase', '-u', '-f', 'qcow2', '-F', backingFormat, '-b', backing, file], `rebasing disk ${file}`)
  },
}
