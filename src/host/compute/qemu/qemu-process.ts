/**
 * A guest's QEMU process: started daemonized (it outlives the agent, and a restarted agent finds it again), found
 * by its pidfile, and trusted only when `/proc/<pid>/cmdline` is a QEMU started with that very pidfile (Proxmox's
 * guard against a recycled pid).
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { DriverError } from '../../../contracts/host/compute-driver.js'

/** The pid of the QEMU that owns `pidfile`, if it runs. */
export function runningPid(pidfile: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(pidfile, 'utf8').trim())
  } catch {
    return undefined
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    const i = argv.indexOf('-pidfile')
    if (i < 0 || argv[i + 1] !== pidfile || !/qemu-system/.test(argv[0] ?? '')) return undefined
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // A zombie has exited; only its parent's wait is missing.
    if (/^\d+ \(.*\) Z/.test(stat)) return undefined
    return pid
  } catch {
    return undefined
  }
}

/**
 * Whether the process has exited and let go of what it held. A killed QEMU's main thread can be a zombie while its
 * other threads are still exiting with the file table they share, so its sockets and files are released only when
 * the last thread is gone: until then the process is not gone (measured: a port it listened on was still taken).
 */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    if (!/^\d+ \(.*\) [ZX]/.test(stat)) return false
    return readdirSync(`/proc/${pid}/task`).every((tid) => tid === String(pid))
  } catch {
    return true
  }
}

/** Waits until the process is gone; false after `timeoutMs`. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!processGone(pid)) {
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 50))
  }
  return true
}

export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // already gone
  }
}

export interface StartOptions {
  binary: string
  args: string[]
  /** Wrap in `systemd-run --scope` so restarting the agent's service does not kill the guest. */
  systemdUnit?: string
}

/**
 * Starts QEMU with `-daemonize`: the command returns once QEMU has set everything up (or failed to), so a bad
 * device, a missing file or a busy tap fails here with QEMU's own message.
 */
export function startDaemonized(o: StartOptions): Promise<void> {
  const [cmd, args] = o.systemdUnit
    ? ['systemd-run', ['--scope', '--quiet', '--collect', `--unit=${o.systemdUnit}`, '--slice=machine.slice', '--', o.binary, ...o.args]]
    : [o.binary, o.args]
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d))
    child.once('error', (err: NodeJS.ErrnoException) => {
      reject(new DriverError(err.code === 'ENOENT' ? `${cmd} is not installed on this host (the qemu driver needs the qemu-system-x86 package)` : `${cmd} could not be started: ${err.message}`))
    })
    child.once('exit', (code, sig) => {
      if (code === 0) return resolve()
      const said = stderr.trim().split('\n').filter(Boolean).slice(-3).join('; ').replace(/^qemu-system-x86_64: /, '')
      reject(new DriverError(`QEMU did not start (${code ?? sig}): ${said || 'no message'}`))
    })
  })
}

export function systemdAvailable(): boolean {
  return existsSync('/run/systemd/system')
}
