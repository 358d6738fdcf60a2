/**
 * What every ComputeDriver's openConsole guarantees (driver.ts), as one suite each driver runs: the simulated
 * driver here, the QEMU driver with a real guest. A serial console answers what is typed; a display is either RFB
 * from its first byte or a 501; an unknown guest is a 404; ending the session leaves the guest running; stopping
 * the guest ends the session.
 */
import { it } from 'node:test'
import assert from 'node:assert/strict'
import type { Duplex } from 'node:stream'
import { DriverError, type ComputeDriver } from '../../../contracts/host/compute-driver.js'

export interface ConsoleTestbed {
  driver: ComputeDriver
  /** A running guest of the driver. */
  serverId: string
  /** How long a guest may take to answer on its console (a TCG guest is slower than a simulated one). */
  answerMs: number
}

/** Reads a stream into text; resolves when `pattern` shows, fails after `ms` with what it saw. */
async function readUntil(stream: Duplex, pattern: RegExp | ((bytes: Buffer) => boolean), ms: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = []
  const ok = () => (typeof pattern === 'function' ? pattern(Buffer.concat(chunks)) : pattern.test(Buffer.concat(chunks).toString('utf8')))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${what}: not within ${ms} ms; the console sent:\n${Buffer.concat(chunks).toString('utf8')}`)), ms)
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      if (ok()) done()
    }
    const onEnd = () => done(ok() ? undefined : new Error(`${what}: the stream ended first`))
    function done(err?: Error) {
      clearTimeout(timer)
      stream.off('data', onData)
      stream.off('end', onEnd)
      if (err) reject(err)
      else resolve(Buffer.concat(chunks))
    }
    stream.on('data', onData)
    stream.on('end', onEnd)
  })
}

function ended(stream: Duplex, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stream.readableEnded || stream.destroyed) return resolve()
    const timer = setTimeout(() => reject(new Error(`the console stream did not end within ${ms} ms`)), ms)
    const finish = () => {
      clearTimeout(timer)
      resolve()
    }
    stream.once('end', finish)
    stream.once('close', finish)
    stream.resume()
  })
}

export function consoleConformance(setup: () => Promise<ConsoleTestbed>): void {
  it('a serial console answers what is typed', async () => {
    const { driver, serverId, answerMs } = await setup()
    const stream = await driver.openConsole(serverId, 'serial')
    const marker = `pcc-${Date.now().toString(36)}`
    // Typed until a shell answers (a login prompt or a busy console may take the first lines): the answer is the
    // marker on a line of its own, which the terminal's echo of the typed command is not.
    const typing = setInterval(() => stream.write(`echo ${marker}\r`), 500)
    stream.write(`echo ${marker}\r`)
    try {
      await readUntil(stream, new RegExp(`\n${marker}\r?\n`), answerMs, 'the typed command answered')
    } finally {
      clearInterval(typing)
      stream.destroy()
    }
  })

  it('a display is RFB from its first byte, or a 501', async () => {
    const { driver, serverId, answerMs } = await setup()
    let stream: Duplex
    try {
      stream = await driver.openConsole(serverId, 'vnc')
    } catch (err) {
      assert.ok(err instanceof DriverError && err.code === 501, `a refusal is a 501 DriverError, got ${String(err)}`)
      return
    }
    try {
      const hello = await readUntil(stream, (b) => b.length >= 12, answerMs, 'the RFB version')
      assert.equal(hello.subarray(0, 12).toString('latin1'), 'RFB 003.008\n')
    } finally {
      stream.destroy()
    }
  })

  it('an unknown guest is a 404', async () => {
    const { driver } = await setup()
    await assert.rejects(driver.openConsole('00000000-0000-4000-8000-00000000dead', 'serial'), (err: unknown) => err instanceof DriverError && err.code === 404)
  })

  it('ending a session leaves the guest running; stopping the guest ends a session', async () => {
    const { driver, serverId, answerMs } = await setup()
    const first = await driver.openConsole(serverId, 'serial')
    first.destroy()
    assert.equal((await driver.info(serverId))?.powerState, 1, 'running after the session ended')
    const second = await driver.openConsole(serverId, 'serial')
    second.resume()
    await driver.powerOff(serverId)
    await ended(second, answerMs)
  })
}
