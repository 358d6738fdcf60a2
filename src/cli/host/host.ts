/**
 * The one place through which host commands (prep-node, decommission-node, generate-support-bundle) touch
 * the host. Every path is taken under a root: `/` on a real host, a scratch folder in tests (PCCTL_HOST_ROOT).
 */
import { spawn, execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs'
import { hostname as osHostname } from 'node:os'
import { dirname, join } from 'node:path'

export class Host {
  constructor(readonly root: string) {}

  static fromEnv(env: NodeJS.ProcessEnv): Host {
    return new Host(env.PCCTL_HOST_ROOT || '/')
  }

  /** The real path of a host path such as /etc/pcc/agent.json. */
  path(hostPath: string): string {
    return join(this.root, hostPath)
  }

  isRoot(): boolean {
    return process.getuid?.() === 0
  }

  hostname(): string {
    const file = this.path('/etc/hostname')
    return (existsSync(file) ? readFileSync(file, 'utf8').trim() : '') || osHostname()
  }

  exists(hostPath: string): boolean {
    return existsSync(this.path(hostPath))
  }

  readText(hostPath: string): string | undefined {
    const file = this.path(hostPath)
    return existsSync(file) ? readFileSync(file, 'utf8') : undefined
  }

  /** Every regular file under a host folder (recursively), as host paths; none when the folder is absent. */
  filesUnder(hostDir: string): string[] {
    const dir = this.path(hostDir)
    if (!existsSync(dir) || !statSync(dir).isDirectory()) return []
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const child = join(hostDir, entry.name)
      if (entry.isDirectory()) return this.filesUnder(child)
      return entry.isFile() ? [child] : []
    })
  }

  /** Writes a host file, creating its folder; `mode` 0600 for secrets. */
  write(hostPath: string, content: string | Uint8Array, mode = 0o644): void {
    const file = this.path(hostPath)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, content, { mode })
    chmodSync(file, mode)
  }

  remove(hostPath: string): boolean {
    const file = this.path(hostPath)
    if (!existsSync(file)) return false
    rmSync(file, { recursive: true, force: true })
    return true
  }

  /** Free bytes on the file system holding a host folder. */
  freeBytes(hostPath: string): number {
    const stats = statfsSync(this.path(hostPath))
    return stats.bavail * stats.bsize
  }

  /** A scratch root stands for a host in tests: services run as plain child processes instead of systemd units. */
  get isScratch(): boolean {
    return this.root !== '/'
  }

  /**
   * Starts a long-running service: a systemd unit on a real host, a detached process with a pid file under a
   * scratch root. Idempotent: a running service is left as it is.
   */
  startService(name: string, command: string[]): void {
    if (this.serviceRunning(name)) return
    if (!this.isScratch) {
      this.write(`/etc/systemd/system/${name}.service`, systemdUnit(name, command))
      execFileSync('systemctl', ['daemon-reload'])
      execFileSync('systemctl', ['enable', '--now', `${name}.service`])
      return
    }
    this.write(`/var/log/pcc/${name}.out`, '')
    const out = openSync(this.path(`/var/log/pcc/${name}.out`), 'a')
    const child = spawn(command[0], command.slice(1), { detached: true, stdio: ['ignore', out, out] })
    child.unref()
    this.write(`/run/${name}.pid`, `${child.pid}\n`)
  }

  serviceRunning(name: string): boolean {
    if (!this.isScratch) {
      try {
        execFileSync('systemctl', ['is-active', '--quiet', `${name}.service`])
        return true
      } catch {
        return false
      }
    }
    return processRunning(Number(this.readText(`/run/${name}.pid`)?.trim()))
  }

  /** Stops and removes a service (its unit or pid file). Waits up to `timeoutMs` for the process to end. */
  async stopService(name: string, timeoutMs = 10_000): Promise<void> {
    if (!this.isScratch) {
      try {
        execFileSync('systemctl', ['disable', '--now', `${name}.service`])
      } catch {
        // Not installed or already stopped: nothing to stop.
      }
      this.remove(`/etc/systemd/system/${name}.service`)
      return
    }
    const pid = Number(this.readText(`/run/${name}.pid`)?.trim())
    if (pid) {
      try {
        process.kill(pid, 'SIGTERM')
      } catch {
        // Already gone.
      }
      // Poll the pid, not the pid file: the agent deletes its pid file as it begins to stop, before it has exited.
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline && processRunning(pid)) await new Promise((r) => setTimeout(r, 100))
      if (processRunning(pid)) process.kill(pid, 'SIGKILL')
    }
    this.remove(`/run/${name}.pid`)
  }
}

/** Whether a process runs (signal 0 checks without touching it); 0 or NaN (no pid file) is not running. */
export function processRunning(pid: number): boolean {
  if (!pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function systemdUnit(name: string, command: string[]): string {
  return [
    '[Unit]',
    `Description=${name} (pcc host agent)`,
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    `ExecStart=${command.map((c) => (/\s/.test(c) ? `"${c}"` : c)).join(' ')}`,
    'Restart=always',
    'RestartSec=5',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n')
}
