/**
 * The one place through which host commands (prep-node, decommission-node, generate-support-bundle) touch
 * the host. Every path is taken under a root: `/` on a real host, a scratch folder in tests (PCCTL_HOST_ROOT).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { hostname as osHostname } from 'node:os'
import { join } from 'node:path'

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
}
