/**
 * Running the host's own tools (iproute2's `ip` and `bridge`, `nft`, `dnsmasq`), in the host's network
 * namespace or, through `nsenter --net=<file>`, in one of the back end's namespaces. Every call is bounded by a
 * timeout; a failure carries the command line and its stderr.
 */
import { execFile } from 'node:child_process'

export class HostCommandError extends Error {
  override name = 'HostCommandError'
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || 'failed'}`)
  }
}

export interface RunOptions {
  /** Text written to the command's stdin (`nft -f -`). */
  input?: string
  /** A namespace file: run inside that network namespace. */
  netns?: string
  timeoutMs?: number
}

export function run(command: string, args: string[], options: RunOptions = {}): Promise<string> {
  const [file, argv] = options.netns ? ['nsenter', [`--net=${options.netns}`, '--', command, ...args]] : [command, args]
  return new Promise((resolve, reject) => {
    const child = execFile(file, argv, { timeout: options.timeoutMs ?? 15_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new HostCommandError([file, ...argv].join(' ').slice(0, 300), stderr || err.message))
      else resolve(stdout)
    })
    if (options.input !== undefined) child.stdin?.end(options.input)
  })
}

/** What `ip` says when the device it was to change or delete is gone already. */
export const GONE = /Cannot find device|does not exist|No such device/

/** Runs a command whose failure means "already so" (deleting what is gone); other failures are still errors. */
export async function runIdempotent(command: string, args: string[], already: RegExp, options: RunOptions = {}): Promise<void> {
  try {
    await run(command, args, options)
  } catch (err) {
    if (!(err instanceof HostCommandError) || !already.test(err.stderr)) throw err
  }
}

/** A device as `ip -j -d link show` describes it (the fields the back end reads). */
export interface LinkInfo {
  ifname: string
  address?: string
  mtu: number
  master?: string
  flags: string[]
  operstate?: string
  linkinfo?: { info_kind?: string; info_data?: { id?: number; local?: string; port?: number; persist?: boolean }; info_slave_kind?: string; info_slave_data?: { isolated?: boolean } }
}

export async function links(netns?: string): Promise<LinkInfo[]> {
  return JSON.parse((await run('ip', ['-j', '-d', 'link', 'show'], { netns })) || '[]') as LinkInfo[]
}

/** Addresses of one device, as address/prefix. */
export async function addresses(device: string, netns?: string): Promise<string[]> {
  const out = JSON.parse((await run('ip', ['-j', 'addr', 'show', 'dev', device], { netns })) || '[]') as { addr_info?: { local: string; prefixlen: number; scope?: string }[] }[]
  return (out[0]?.addr_info ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`)
}
