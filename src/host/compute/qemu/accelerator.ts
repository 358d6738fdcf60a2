/**
 * KVM or TCG: decided by trying a real guest, not by the presence of /dev/kvm. On some machines (nested, or a
 * kernel/CPU combination KVM handles badly) /dev/kvm opens and QEMU starts, but a Linux guest never prints a line
 * and burns system time; the agent must notice and fall back to TCG (software emulation, 10–50× slower) instead
 * of hanging every guest. The probe boots a Linux kernel under KVM with the CPU model guests would get and waits
 * for its first console line for a few seconds. No kernel on the host: it runs the firmware alone (SeaBIOS's
 * first debug-port line), a weaker proof. The answer is kept for the host's boot (`probeOncePerBoot`): an agent
 * restart does not try a guest again, a reboot, another QEMU or kernel, or /dev/kvm appearing does.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Accelerator } from './command-line.js'

export interface AcceleratorChoice {
  accel: Accelerator
  /** The CPU model guests get: `host` under KVM, QEMU's default under TCG. */
  cpu: string | undefined
  /** Why, for the logs and the host's facts. */
  reason: string
}

export interface ProbeOptions {
  binary: string
  /** A kernel to boot (default: the newest /boot/vmlinuz-*). */
  kernel?: string
  timeoutMs?: number
  kvmDevice?: string
}

function newestKernel(): string | undefined {
  try {
    const kernels = readdirSync('/boot').filter((f) => f.startsWith('vmlinuz-')).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    return kernels.length ? join('/boot', kernels.at(-1)!) : undefined
  } catch {
    return undefined
  }
}

/** Runs QEMU until `done(output)` says so or the timeout passes; answers whether it did, and what QEMU said. */
function tryGuest(binary: string, args: string[], outputFile: string, done: (output: string) => boolean, timeoutMs: number): Promise<{ ok: boolean; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d))
    let settled = false
    const finish = (ok: boolean) => {
      if (settled) return
      settled = true
      clearInterval(poll)
      clearTimeout(timer)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      child.once('exit', () => resolve({ ok, stderr }))
      if (child.exitCode !== null || child.signalCode !== null) resolve({ ok, stderr })
    }
    const poll = setInterval(() => {
      if (existsSync(outputFile) && done(readFileSync(outputFile, 'latin1'))) finish(true)
    }, 50)
    const timer = setTimeout(() => finish(false), timeoutMs)
    child.once('error', () => finish(false))
    child.once('exit', () => finish(existsSync(outputFile) && done(readFileSync(outputFile, 'latin1'))))
  })
}

export async function probeAccelerator(options: ProbeOptions): Promise<AcceleratorChoice> {
  const device = options.kvmDevice ?? '/dev/kvm'
  const tcg = (reason: string): AcceleratorChoice => ({ accel: 'tcg', cpu: undefined, reason })
  if (!existsSync(device)) return tcg(`${device} does not exist`)
  const timeoutMs = options.timeoutMs ?? 3000
  const dir = mkdtempSync(join(tmpdir(), 'pcc-kvm-probe-'))
  try {
    const out = join(dir, 'out')
    const base = ['-accel', 'kvm', '-cpu', 'host', '-machine', 'pc', '-m', '128', '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot']
    const kernel = options.kernel ?? newestKernel()
    if (kernel) {
      const args = [...base, '-kernel', kernel, '-append', 'console=ttyS0 panic=-1', '-chardev', `file,id=s,path=${out}`, '-serial', 'chardev:s']
      const run = await tryGuest(options.binary, args, out, (o) => /Linux version/.test(o), timeoutMs)
      if (run.ok) return { accel: 'kvm', cpu: 'host', reason: `a Linux guest (${kernel}) printed its first line under KVM within ${timeoutMs} ms` }
      const said = run.stderr.trim().split('\n').at(-1)
      return tcg(`a Linux guest under KVM printed nothing within ${timeoutMs} ms${said ? ` (QEMU: ${said})` : ''}`)
    }
    const args = [...base, '-chardev', `file,id=dbg,path=${out}`, '-device', 'isa-debugcon,iobase=0x402,chardev=dbg']
    const run = await tryGuest(options.binary, args, out, (o) => /SeaBIOS/.test(o), timeoutMs)
    if (run.ok) return { accel: 'kvm', cpu: 'host', reason: `the firmware ran under KVM (no kernel on this host to try a full guest)` }
    return tcg(`the firmware under KVM printed nothing within ${timeoutMs} ms`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The probe's answer, kept in `file` for this boot of the host: on hosts where a KVM guest hangs, every agent start
 * would otherwise spend the probe's timeout (and a CPU) again. Probed anew when the boot, the QEMU (`qemuVersion`),
 * the kernel tried or the KVM device's presence differ.
 */
export async function probeOncePerBoot(file: string, options: ProbeOptions, qemuVersion: string): Promise<AcceleratorChoice> {
  let boot = ''
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return probeAccelerator(options)
  }
  const key = [boot, options.binary, qemuVersion, options.kernel ?? newestKernel() ?? '', existsSync(options.kvmDevice ?? '/dev/kvm')].join('|')
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { key: string; choice: AcceleratorChoice; at: string }
    if (kept.key === key) return { ...kept.choice, reason: `${kept.choice.reason} (probed at ${kept.at}, kept for this boot)` }
  } catch {
    // none kept, or unreadable: probe
  }
  const choice = await probeAccelerator(options)
  writeFileSync(file, JSON.stringify({ key, choice, at: new Date().toISOString() }))
  return choice
}
