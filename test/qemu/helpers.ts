/** What the QEMU end-to-end tests share: waiting on a server's status and on its guest's own console lines. */
import assert from 'node:assert/strict'
import type { ComputeClient } from '../../src/testkit/compute-api.js'
import { until } from '../../src/testkit/compute-api.js'
import { lastBoot, lastTick } from '../../src/testkit/qemu.js'

export const NANO = '42'

/** A server action that must be answered with `expected`; the reply. */
export async function acts(api: ComputeClient, id: string, action: string, body: unknown, expected: number) {
  const r = await api.action(id, action, body)
  assert.equal(r.status, expected, `${action}: ${JSON.stringify(r.body)}`)
  return r
}

/** The guest's console log as the API serves it (os-getConsoleOutput). */
export async function consoleLog(api: ComputeClient, id: string): Promise<string> {
  const r = await api.action(id, 'os-getConsoleOutput', {})
  return r.status === 200 ? (r.body.output as string) : ''
}

/** Waits until the server rests (no task state) in `status`; fails with its fault otherwise. */
export async function rests(api: ComputeClient, id: string, status: string, ms = 240_000): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const s = await until(`server ${id} to rest`, ms, async () => {
    const v = await api.server(id)
    return v && v['OS-EXT-STS:task_state'] === null && v.status !== 'BUILD' ? v : undefined
  }, 250)
  if (s.status !== status) throw new Error(`server ${id} is ${s.status}, not ${status}: ${JSON.stringify(s.fault ?? null)}`)
  return s
}

/** Waits until the console shows `pattern`; answers the log. */
export async function sees(api: ComputeClient, id: string, pattern: RegExp, ms = 120_000): Promise<string> {
  let text = ''
  try {
    return await until(`${pattern} in the console of ${id}`, ms, async () => {
      text = await consoleLog(api, id)
      return pattern.test(text) ? text : undefined
    }, 500)
  } catch (err) {
    throw new Error(`${(err as Error).message}; console:\n${text.slice(-2500)}`)
  }
}

/** Waits for the guest's boot number `n` to complete: the last boot its console shows is `n`, and `ready` follows it. */
export async function booted(api: ComputeClient, id: string, n: number, ms = 120_000): Promise<string> {
  let text = ''
  try {
    return await until(`boot ${n} of ${id}`, ms, async () => {
      text = await consoleLog(api, id)
      return lastBoot(text) === n && /pcc-guest: ready/.test(text.slice(text.lastIndexOf('pcc-guest: boot '))) ? text : undefined
    }, 500)
  } catch (err) {
    throw new Error(`${(err as Error).message}; console:\n${text.slice(-2500)}`)
  }
}

/** The guest runs on where it was: its ticker counts past what it showed, and it did not start again. */
export async function runsOn(api: ComputeClient, id: string): Promise<void> {
  const before = await consoleLog(api, id)
  const after = await sees(api, id, new RegExp(`pcc-guest: tick ${lastTick(before) + 1}\\b`), 30_000)
  const fresh = after.slice(before.length)
  if (/pcc-guest: userspace up/.test(fresh)) throw new Error(`the guest started again:\n${fresh}`)
}

/** User data: counts seconds on the console and writes a file on its own disk. */
export const TICKING_WRITER = '#!/bin/sh\necho "written at boot $(cat /mnt/disk/pcc/boot-count)" > /mnt/disk/files/note\nsync\nn=0\nwhile true; do n=$((n+1)); echo "pcc-guest: tick $n"; sleep 1; done\n'

export const b64 = (text: string) => Buffer.from(text).toString('base64')
