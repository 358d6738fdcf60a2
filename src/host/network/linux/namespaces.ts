/**
 * The back end's network namespaces (`qdhcp-<net>`, `qrouter-<router>`) as files under `<root>/run/netns`: on a
 * real host (root `/`) that is the directory `ip netns` uses, so operators list and enter them as usual; a test
 * host gets its own directory, so two hosts on one machine never share a namespace name. A namespace is a bind
 * mount of the kernel's namespace (`unshare --net=<file>`), entered with `nsenter --net=<file>`, and it outlives
 * the agent.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { OWNED } from '../names.js'
import { GONE, links, run, runIdempotent } from './host-commands.js'

export class Namespaces {
  readonly dir: string

  constructor(root: string) {
    this.dir = join(root, 'run/netns')
  }

  path(name: string): string {
    return join(this.dir, name)
  }

  /** True when the file is a live namespace (a mount of its own, not an empty file left by a reboot). */
  exists(name: string): boolean {
    const file = this.path(name)
    try {
      return statSync(file).dev !== statSync(this.dir).dev
    } catch {
      return false
    }
  }

  /** The back end's namespaces present now, by name. */
  list(): string[] {
    if (!existsSync(this.dir)) return []
    return readdirSync(this.dir).filter((n) => OWNED.namespace.test(n))
  }

  async ensure(name: string): Promise<string> {
    const file = this.path(name)
    if (this.exists(name)) return file
    mkdirSync(this.dir, { recursive: true })
    writeFileSync(file, '')
    await run('unshare', [`--net=${file}`, 'true'])
    await run('ip', ['link', 'set', 'lo', 'up'], { netns: file })
    return file
  }

  /**
   * Stops every process still inside, deletes its veths, then removes the namespace. The veths go first because
   * the namespace itself may outlive its mount: a socket another process keeps open inside (the agent's end of a
   * guest's metadata connection, closing towards a guest that is gone) holds it for minutes, and with it the
   * veths' host ends.
   */
  async remove(name: string): Promise<void> {
    const file = this.path(name)
    if (this.exists(name)) {
      await killInside(file)
      for (const l of await links(file)) if (l.linkinfo?.info_kind === 'veth') await runIdempotent('ip', ['link', 'del', 'dev', l.ifname], GONE, { netns: file })
      await runIdempotent('umount', [file], /not mounted|no mount point/)
    }
    rmSync(file, { force: true })
  }
}

/** Pids whose network namespace is the one mounted at `file` (same inode as /proc/<pid>/ns/net). */
export function processesIn(file: string): number[] {
  let inode: number
  try {
    inode = statSync(file).ino
  } catch {
    return []
  }
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (statSync(`/proc/${entry}/ns/net`).ino === inode) pids.push(Number(entry))
    } catch {
      // The process ended meanwhile, or is not ours to see.
    }
  }
  return pids
}

async function killInside(file: string): Promise<void> {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const pids = processesIn(file).filter((p) => p !== process.pid)
    if (pids.length === 0) return
    for (const pid of pids) {
      try {
        process.kill(pid, signal)
      } catch {
        // already gone
      }
    }
    const deadline = Date.now() + 3000
    while (Date.now() < deadline && processesIn(file).some((p) => pids.includes(p))) await new Promise((r) => setTimeout(r, 50))
  }
}

/** Whether a pid file names a live process whose command line contains `marker` (guards against pid reuse). */
export function runningFrom(pidFile: string, marker: string): number | undefined {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim())
    if (!Number.isInteger(pid) || pid <= 0) return undefined
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    return cmdline.includes(marker) ? pid : undefined
  } catch {
    return undefined
  }
}
