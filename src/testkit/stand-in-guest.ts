/**
 * Stand-in guests for networking tests: a network namespace playing a guest NIC, joined to a test host by a
 * veth whose host end carries the port's tap name (`tap<port-id[:11]>`) — the name the network back end expects,
 * so it takes the device as the guest's tap, as it takes a tap QEMU made — with the port's MAC inside. Inside,
 * busybox does what a guest does: `udhcpc` (with a script that applies the address, the MTU and the classless
 * routes, RFC 3442), `ping`, `nc`, `wget`.
 *
 * Needs root, `ip` and busybox. `close()` stops what the guest runs and removes its veth and its namespace.
 */
import { execFile, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tapName } from '../contracts/network/names.js'

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
  const tap = tapName(portId)
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
      const quietly = (args: string[]) => {
        try {
          return execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString()
        } catch {
          return '' // already gone
        }
      }
      // What the guest still runs (a listener) would keep its namespace, and so the veth, alive.
      for (const pid of quietly(['netns', 'pids', namespace]).split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL')
      // The veth goes first: a TCP connection cut by a firewall leaves an orphaned socket retransmitting for a
      // minute or two after its process died, and that socket keeps the namespace (and so a veth in it) alive.
      quietly(['-n', namespace, 'link', 'del', 'eth0'])
      quietly(['netns', 'del', namespace])
    },
  }
}

/** A long-lived TCP connection between two guests (tcpStream). */
export interface TcpStream {
  /** Bytes the server received so far. */
  received(): number
  /** Whether bytes still arrive: some within the next `ms` (a line is sent every 100 ms). */
  flowing(ms?: number): Promise<boolean>
  /** Ends both ends (their process groups) and removes the file. */
  close(): void
}

/**
 * A TCP connection from `client` to `server` at `serverIp`:`port` that sends a line every 100 ms for as long as
 * it lives; the server (busybox nc) writes what it receives to `file`, whose size says whether bytes still pass.
 * Resolves once the first bytes arrived.
 */
export async function tcpStream(client: StandInGuest, server: StandInGuest, serverIp: string, port: number, file: string): Promise<TcpStream> {
  const groups: number[] = []
  const start = (g: StandInGuest, command: string, stdout: number | 'ignore') => {
    // stdin stays open: busybox nc ends its connection when its input ends.
    const child = spawn('ip', ['netns', 'exec', g.namespace, 'sh', '-c', command], { detached: true, stdio: ['pipe', stdout, 'ignore'] })
    if (child.pid) groups.push(child.pid)
  }
  const close = () => {
    for (const pid of groups) {
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    rmSync(file, { force: true })
  }
  const received = () => statSync(file).size
  const within = async (ms: number, what: string, ok: () => Promise<boolean> | boolean) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (await ok()) return
    close()
    throw new Error(`timed out after ${ms} ms waiting for ${what}`)
  }
  const fd = openSync(file, 'w')
  start(server, `exec busybox nc -l -p ${port}`, fd)
  closeSync(fd)
  await within(5000, `a listener on ${port}`, async () => (await server.exec(['sh', '-c', `busybox netstat -ltn | grep -q ':${port} '`])).code === 0)
  start(client, `while :; do echo line; sleep 0.1; done | busybox nc ${serverIp} ${port}`, 'ignore')
  await within(5000, `bytes through port ${port}`, () => received() > 0)
  return {
    received,
    async flowing(ms = 700) {
      const before = received()
      await new Promise((r) => setTimeout(r, ms))
      return received() > before
    },
    close,
  }
}

