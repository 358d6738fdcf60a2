/**
 * Stand-in guests for networking tests: a network namespace playing a guest NIC, joined to a test host by a
 * veth whose host end carries the port's tap name (`tap<port-id[:11]>`) — the name the network back end expects,
 * so it takes the device as the guest's tap, as it takes a tap QEMU made — with the port's MAC inside. Inside,
 * busybox does what a guest does: `udhcpc` (with a script that applies the address, the MTU and the classless
 * routes, RFC 3442), `ping`, `nc`, `wget`.
 *
 * Needs root, `ip` and busybox. `close()` stops what the guest runs and removes its namespace (the veth goes with it).
 */
import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** busybox udhcpc's event script: configure, then print the lease as `lease: KEY=VALUE` lines. */
const UDHCPC_SCRIPT = `#!/bin/sh
case "$1" in
  deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/$mask" dev "$interface"
    [ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
    if [ -n "$staticroutes" ]; then
      set -- $staticroutes
      while [ $# -ge 2 ]; do ip route replace "$1" via "$2" dev "$interface"; shift 2; done
    elif [ -n "$router" ]; then
      ip route replace default via "\${router%% *}" dev "$interface"
    fi
    for k in ip mask router dns mtu staticroutes hostname serverid lease; do eval "echo lease: $k=\\$$k"; done
    ;;
esac
exit 0
`

export interface RunResult {
  code: number
  stdout: string
  stderr: string
}

export interface StandInGuest {
  namespace: string
  /** Runs a command inside the guest (bounded by `timeoutMs`); never throws for a non-zero exit. */
  exec(args: string[], timeoutMs?: number): Promise<RunResult>
  /** busybox udhcpc on eth0: the lease's fields (ip, mask, router, mtu, staticroutes…), or undefined without one. */
  dhcp(timeoutSeconds?: number): Promise<Record<string, string> | undefined>
  /** Sets an address by hand (the guest as it was before DHCP, or a spoofing one). */
  address(cidr: string): Promise<void>
  close(): void
}

let scriptDir: string | undefined
function udhcpcScript(): string {
  if (!scriptDir) {
    scriptDir = mkdtempSync(join(tmpdir(), 'pcc-udhcpc-'))
    process.once('exit', () => rmSync(scriptDir!, { recursive: true, force: true }))
  }
  const file = join(scriptDir, 'udhcpc.sh')
  writeFileSync(file, UDHCPC_SCRIPT, { mode: 0o755 })
  return file
}

export function runIn(namespace: string, args: string[], timeoutMs = 10_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile('ip', ['netns', 'exec', namespace, ...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

/** A guest NIC for port `portId` with `mac`, plugged into the host whose namespace is `hostNamespace`. */
export function standInGuest(hostNamespace: string, portId: string, mac: string): StandInGuest {
  const namespace = `pccg-${randomBytes(4).toString('hex')}`
  const tap = `tap${portId.slice(0, 11)}`
  execFileSync('ip', ['netns', 'add', namespace])
  try {
    execFileSync('ip', ['-n', hostNamespace, 'link', 'add', tap, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace])
    execFileSync('ip', ['-n', namespace, 'link', 'set', 'eth0', 'address', mac])
    execFileSync('ip', ['-n', namespace, 'link', 'set', 'lo', 'up'])
    execFileSync('ip', ['-n', namespace, 'link', 'set', 'eth0', 'up'])
  } catch (err) {
    execFileSync('ip', ['netns', 'del', namespace])
    throw err
  }
  const exec = (args: string[], timeoutMs?: number) => runIn(namespace, args, timeoutMs)
  return {
    namespace,
    exec,
    async dhcp(timeoutSeconds = 8) {
      const r = await exec(['busybox', 'udhcpc', '-i', 'eth0', '-f', '-q', '-n', '-t', String(timeoutSeconds), '-T', '1', '-s', udhcpcScript()], (timeoutSeconds + 5) * 1000)
      const lease: Record<string, string> = {}
      for (const m of r.stdout.matchAll(/^lease: (\w+)=(.*)$/gm)) lease[m[1]] = m[2].trim()
      return lease.ip ? lease : undefined
    },
    async address(cidr: string) {
      const r = await exec(['ip', 'addr', 'add', cidr, 'dev', 'eth0'])
      if (r.code !== 0) throw new Error(`ip addr add ${cidr}: ${r.stderr}`)
    },
    close() {
      try {
        // What the guest still runs (a listener) would keep its namespace, and so the veth, alive.
        for (const pid of execFileSync('ip', ['netns', 'pids', namespace]).toString().split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL')
        execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' })
      } catch {
        // already gone
      }
    },
  }
}
