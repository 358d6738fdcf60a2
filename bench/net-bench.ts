/**
 * What the network benchmarks share: a one-host cloud with the Linux data plane and stand-in guests
 * (testkit/dataplane-cluster.ts), removed afterwards whatever happened, and running a probe (net-probes.ts)
 * inside a guest.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { dataplaneMissing, startDataplaneCluster, type DataplaneCluster } from '../src/testkit/dataplane-cluster.js'
import type { StandInGuest } from '../src/testkit/stand-in-guest.js'

const PROBE = join(process.cwd(), 'dist/bench/net-probes.js')

/** Runs `work` on a fresh one-host data plane; the guests it pushes to `guests` are removed with the rest. */
export async function onDataplane<T>(work: (c: DataplaneCluster, guests: StandInGuest[]) => Promise<T>): Promise<T> {
  const missing = dataplaneMissing()
  if (missing) throw new Error(`cannot run: ${missing}`)
  const c = await startDataplaneCluster({ hosts: 1 })
  const guests: StandInGuest[] = []
  try {
    return await work(c, guests)
  } finally {
    for (const g of guests) g.close()
    await c.close()
  }
}

/** Runs net-probes.js with `args` inside the guest; resolves with the JSON line it prints. */
export function probeIn<T>(guest: StandInGuest, args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', guest.namespace, process.execPath, PROBE, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim()) as T) : reject(new Error(`probe ${args[0]} exited ${code}`))))
  })
}
