/**
 * The guest's console log: QEMU appends everything the serial port carries to `console.log` (the chardev's
 * `logfile`, `logappend=on`) and never rotates it, so the driver does (copy-truncate, as virtlogd would): past
 * `maxBytes` the file becomes `console.log.0` and starts again empty. Reading gives the newest 100 KiB across both
 * files, Nova's MAX_CONSOLE_BYTES.
 */
import { closeSync, copyFileSync, existsSync, openSync, readSync, statSync, truncateSync } from 'node:fs'

export const MAX_CONSOLE_BYTES = 100 * 1024

function tail(file: string, bytes: number): Buffer {
  if (!existsSync(file)) return Buffer.alloc(0)
  const size = statSync(file).size
  const start = Math.max(0, size - bytes)
  const buf = Buffer.alloc(size - start)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, buf, 0, buf.length, start)
  } finally {
    closeSync(fd)
  }
  return buf
}

/** The whole log (newest 100 KiB), or its last `lines` lines. */
export function readConsoleLog(log: string, lines?: number): string {
  const current = tail(log, MAX_CONSOLE_BYTES)
  const older = current.length < MAX_CONSOLE_BYTES ? tail(`${log}.0`, MAX_CONSOLE_BYTES - current.length) : Buffer.alloc(0)
  const text = Buffer.concat([older, current]).toString('utf8')
  if (lines === undefined || lines < 0) return text
  if (lines === 0) return ''
  const all = text.split('\n')
  // A trailing newline leaves an empty last element: it is not a line.
  const body = all.at(-1) === '' ? all.slice(0, -1) : all
  return body.slice(-lines).join('\n') + (body.length ? '\n' : '')
}

/** Rotates the log once it is past `maxBytes`; safe while QEMU writes (it appends, so it continues at 0). */
export function rotateConsoleLog(log: string, maxBytes: number): boolean {
  if (!existsSync(log) || statSync(log).size <= maxBytes) return false
  copyFileSync(log, `${log}.0`)
  truncateSync(log, 0)
  return true
}
