/**
 * The commands the start summary tells the operator to type, spelled as they run on this machine: from a fresh
 * clone neither `pcc-server` nor `pcctl` is on PATH (npm puts a package's own bins nowhere), so the summary
 * names what is (`node …/main.js`, `node …/pcctl.mjs`) and how to put pcctl on PATH.
 */
import { accessSync, constants as fsConstants, existsSync, realpathSync } from 'node:fs'
import { basename, delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** pcctl as `npm start` builds it (scripts/build-release.mjs), and as tsc does when the bundle is not built. */
const PCCTL_BUNDLE = fileURLToPath(new URL('../../release/pcctl.mjs', import.meta.url))
const PCCTL_MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url))

/** The executable file NAME in a directory of PATH, if there is one. */
export function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue
    const file = join(dir, name)
    try {
      accessSync(file, fsConstants.X_OK)
      return file
    } catch {
      // Not here.
    }
  }
  return undefined
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b)
  } catch {
    return false
  }
}

/** How to run this pcc-server again: its name when that is on PATH and is this program, else node and its file. */
export function serverCommand(script: string, path: string | undefined): string {
  const onPath = findOnPath('pcc-server', path)
  if (onPath && (basename(script) === 'pcc-server' || sameFile(onPath, script))) return 'pcc-server'
  return `node ${script}`
}

/** How to run pcctl here: `pcctl` when it is on PATH, else node and the built bundle. */
export function pcctlCommand(path: string | undefined): { command: string; onPath: boolean } {
  if (findOnPath('pcctl', path)) return { command: 'pcctl', onPath: true }
  return { command: `node ${existsSync(PCCTL_BUNDLE) ? PCCTL_BUNDLE : PCCTL_MAIN}`, onPath: false }
}

/** The line that puts pcctl on PATH from this control plane (install.sh, checksum-verified; README, docs/cli.md). */
export function pcctlInstallLine(publicUrl: string): string {
  const installer = `curl -fsSL ${publicUrl}/downloads/install.sh`
  return `To put pcctl on PATH: ${installer} | sudo bash   (without root: ${installer} | PCCTL_PREFIX=$HOME/.local bash)`
}
