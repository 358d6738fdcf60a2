/**
 * The QEMU processes running on this machine, found by their command line: guests are daemonized and outlive the
 * agent (and pcc-server in all-in-one mode), so the clean-up command, the all-in-one start's check for guests of
 * another data dir and the tests find them here. A guest belongs to the agent root its `-pidfile` lies under.
 */
import { readdirSync, readFileSync } from 'node:fs'

export interface QemuProcess {
  pid: number
  argv: string[]
}

/** The QEMU processes on this machine, each with its argv (a process gone meanwhile is left out). */
export function qemuProcesses(): QemuProcess[] {
  const out: QemuProcess[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      if (/qemu-system/.test(argv[0])) out.push({ pid: Number(pid), argv })
    } catch {
      // gone meanwhile
    }
  }
  return out
}

export const pidfileOf = (argv: string[]): string => (argv.includes('-pidfile') ? argv[argv.indexOf('-pidfile') + 1] ?? '' : '')

/** QEMU processes whose pidfile lies under `root`, by pid. */
export function qemuProcessesUnder(root: string): number[] {
  return qemuProcesses().filter((q) => pidfileOf(q.argv).startsWith(`${root}/`)).map((q) => q.pid)
}

/** The agent root a pcc guest's pidfile lies under (`<root>/var/lib/pcc/instances/…`), or undefined for another QEMU. */
export function agentRootOf(argv: string[]): string | undefined {
  const file = pidfileOf(argv)
  const at = file.indexOf('/var/lib/pcc/')
  return at > 0 ? file.slice(0, at) : undefined
}
