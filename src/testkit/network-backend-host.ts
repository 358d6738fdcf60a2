/**
 * The Linux network back end running inside a test host's namespace, as a NetworkBackend the test drives
 * (test/fixtures/network-backend-host.ts is the process; this is its client). Each request is bounded by a
 * timeout; `close()` ends the process (its devices stay until teardown: call that first).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { HostNetworkState } from '../contracts/network/dataplane.js'
import type { NetworkBackend, NetworkInventory } from '../host/network/backend.js'

const FIXTURE = join(process.cwd(), 'dist/test/fixtures/network-backend-host.js')

export class RemoteLinuxBackend implements NetworkBackend {
  readonly name = 'linux'
  private readonly child: ChildProcess
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  private next = 1
  /** What the back end warned about (stderr lines). */
  readonly warnings: string[] = []

  /** `env`: the back-end process's environment (default: this process's). */
  constructor(hostNamespace: string, root: string, tunnelIp: string | null, physicalInterfaces: Record<string, string> = {}, env?: NodeJS.ProcessEnv) {
    this.child = spawn('nsenter', [`--net=/run/netns/${hostNamespace}`, '--', process.execPath, FIXTURE, root, tunnelIp ?? '', JSON.stringify(physicalInterfaces)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: env ?? process.env,
    })
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const answer = JSON.parse(line) as { id: number; result?: unknown; error?: string }
      const waiter = this.pending.get(answer.id)
      this.pending.delete(answer.id)
      if (answer.error !== undefined) waiter?.reject(new Error(answer.error))
      else waiter?.resolve(answer.result)
    })
    createInterface({ input: this.child.stderr! }).on('line', (line) => this.warnings.push(line))
    this.child.on('exit', () => {
      for (const w of this.pending.values()) w.reject(new Error('the back-end process exited'))
      this.pending.clear()
    })
  }

  private call<T>(op: string, state?: HostNetworkState, timeoutMs = 60_000): Promise<T> {
    const id = this.next++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new Error(`${op} did not finish within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer)
          resolve(v as T)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      this.child.stdin!.write(JSON.stringify({ id, op, state }) + '\n')
    })
  }

  apply(state: HostNetworkState): Promise<void> {
    return this.call('apply', state)
  }

  inventory(): Promise<NetworkInventory> {
    return this.call('inventory')
  }

  teardown(): Promise<void> {
    return this.call('teardown')
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return
    const exited = new Promise((r) => this.child.once('exit', r))
    this.child.stdin!.end()
    this.child.kill('SIGTERM')
    await exited
  }
}
