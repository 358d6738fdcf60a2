/**
 * Directories only root reads, made without narrowing their parents. `mkdir(path, { recursive: true, mode: 0o700 })`
 * gives the mode to every directory it creates, so a first start made `<root>/var`, `var/lib` and `var/lib/pcc` 0700
 * too, and dnsmasq, which drops to `nobody` and needs every directory above its files searchable, kept root
 * privileges (docs/network.md, "DHCP"). Parents get the default mode; only the directory itself is 0700.
 */
import { chmodSync, mkdirSync } from 'node:fs'
import { chmod, mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'

/** Makes `path` (and its missing parents, with the default mode) and sets it, and only it, to 0700. */
export function privateDirSync(path: string): void {
  mkdirSync(dirname(path), { recursive: true })
  mkdirSync(path, { recursive: true, mode: 0o700 })
  chmodSync(path, 0o700)
}

export async function privateDirAsync(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  await mkdir(path, { recursive: true, mode: 0o700 })
  await chmod(path, 0o700)
}
