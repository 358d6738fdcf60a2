import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Duplex } from 'node:stream'
import { DriverError, type GuestSpec } from '../../src/contracts/host/compute-driver.js'
import { SimulatedDriver } from '../../src/host/compute/simulated/simulated-driver.js'

const spec = (id = 'srv-1'): GuestSpec => ({
  serverId: id,
  instanceName: 'instance-00000001',
  flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
  imageId: 'cirros',
  hostname: 'vm1',
  userData: null,
})

const driver = (over: Partial<ConstructorParameters<typeof SimulatedDriver>[0]> = {}) =>
  new SimulatedDriver({ hostname: 'sim', vcpus: 16, memoryMb: 32768, diskGb: 500, delayMs: 0, failureRate: 0, ...over })

describe('the simulated driver', () => {
  it('moves the guest power state as a real hypervisor does', async () => {
    const d = driver()
    assert.equal((await d.spawn(spec())).powerState, 1)
    await d.pause('srv-1')
    assert.equal((await d.info('srv-1'))!.powerState, 3)
    await assert.rejects(d.reboot('srv-1', 'SOFT'), DriverError, 'a paused guest cannot soft-reboot')
    await d.unpause('srv-1')
    await d.suspend('srv-1')
    assert.equal((await d.info('srv-1'))!.powerState, 7)
    await d.resume('srv-1')
    await d.powerOff('srv-1')
    assert.equal((await d.info('srv-1'))!.powerState, 4)
    await assert.rejects(d.pause('srv-1'), /not running/)
    await d.reboot('srv-1', 'HARD')
    assert.equal((await d.info('srv-1'))!.powerState, 1)
    await d.rescue('srv-1', null)
    assert.equal((await d.info('srv-1'))!.rescued, true)
    await d.unrescue('srv-1')
    await d.destroy('srv-1')
    assert.equal(await d.info('srv-1'), undefined)
    await d.destroy('srv-1')
  })

  it('grows the console log with every boot and returns the last lines on request', async () => {
    const d = driver()
    await d.spawn(spec())
    const one = await d.consoleOutput('srv-1')
    await d.reboot('srv-1', 'SOFT')
    await d.powerOff('srv-1')
    await d.powerOn('srv-1')
    const three = await d.consoleOutput('srv-1')
    assert.match(three, /boot 3/)
    assert.ok(three.length > one.length)
    assert.equal((await d.consoleOutput('srv-1', 2)).trim().split('\n').length, 2)
    assert.equal((await d.info('srv-1'))!.boots, 3)
  })

  it('takes the configured time per operation', async () => {
    const d = driver({ delayMs: 40 })
    const started = Date.now()
    await d.spawn(spec())
    assert.ok(Date.now() - started >= 110, 'spawn costs three base delays')
  })

  it('fails at the injected rate, and always for an injected operation', async () => {
    const rolls = [0.1, 0.9, 0.1, 0.9]
    const d = driver({ failureRate: 0.5, random: () => rolls.shift() ?? 0.9 })
    await assert.rejects(d.spawn(spec('a')), /simulated failure of spawn/)
    await d.spawn(spec('b'))
    d.injectFailures(0, { powerOff: 'disk stuck' })
    await assert.rejects(d.powerOff('b'), /disk stuck/)
    d.injectFailures(0)
    await d.powerOff('b')
  })

  it('reports capacity and live-migrates a guest to another simulated host', async () => {
    const a = driver()
    const b = driver({ hostname: 'sim-b' })
    assert.deepEqual((({ vcpus, memoryMb, diskGb }) => ({ vcpus, memoryMb, diskGb }))(await a.capacity()), { vcpus: 16, memoryMb: 32768, diskGb: 500 })
    await a.spawn(spec())
    await b.finishLiveMigration('srv-1', await a.liveMigrateTo('srv-1', await b.prepareLiveMigration(spec())))
    await a.forget('srv-1')
    assert.equal(await a.info('srv-1'), undefined)
    assert.equal((await b.info('srv-1'))!.powerState, 1)
    assert.match(await b.consoleOutput('srv-1'), /live-migrated to sim-b/)
  })

  it('finds guests it has not seen through its resolver (a restarted control plane) but not ones it destroyed', async () => {
    const d = driver({ resolve: async (id) => ({ serverId: id, powerState: 4, rescued: false, vcpus: 1, memoryMb: 512, diskGb: 1, boots: 1 }) })
    assert.equal((await d.info('known'))!.powerState, 4)
    await d.powerOn('known')
    assert.equal((await d.info('known'))!.powerState, 1)
    await d.destroy('known')
    assert.equal(await d.info('known'), undefined)
  })
})

/** Collects what a console stream sends; `until` waits (bounded) for a pattern in the text so far. */
function reader(stream: Duplex) {
  let text = ''
  let ended = false
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
  stream.on('end', () => (ended = true))
  return {
    get text() {
      return text
    },
    get ended() {
      return ended
    },
    async until(pattern: RegExp | (() => boolean), what = String(pattern)): Promise<string> {
      const ok = () => (typeof pattern === 'function' ? pattern() : pattern.test(text))
      for (const deadline = Date.now() + 2000; !ok(); ) {
        if (Date.now() > deadline) throw new Error(`console never showed ${what}; it shows:\n${text}`)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      return text
    },
  }
}

describe('the simulated serial console', () => {
  it('shows the boot lines and a login prompt, echoes what is typed and answers commands', async () => {
    const d = driver()
    await d.spawn(spec())
    const term = await d.openConsole('srv-1', 'serial')
    const out = reader(term)
    await out.until(/Linux version 6\.1\.0-pcc \(boot 1\)[\s\S]*vm1 login: $/)
    term.write('alice\r')
    await out.until(/alice@vm1:~\$ $/)
    term.write('hostnam')
    term.write(Buffer.from([0x7f]))
    term.write('me\r\n')
    await out.until(/me\r\nvm1\r\nalice@vm1:~\$ $/, 'the hostname answer (typed with a backspace, CR LF counted once)')
    assert.ok(out.text.includes('hostnam\b \bme'), 'backspace is echoed as erase')
    term.write('cat /var/lib/cloud/data/instance-id\r')
    await out.until(/\r\nsrv-1\r\nalice@vm1/)
    term.write('frobnicate\r')
    await out.until(/-sh: frobnicate: not found/)
    term.write('sleep 100')
    term.write(Buffer.from([0x03]))
    await out.until(/sleep 100\^C\r\nalice@vm1:~\$ $/)
    term.write('exit\r')
    await out.until(/vm1 login: $/)
    term.destroy()
  })

  it('prints new console lines while open, logs out on reboot and ends when the guest stops', async () => {
    const d = driver()
    await d.spawn(spec())
    const term = await d.openConsole('srv-1', 'serial')
    const out = reader(term)
    term.write('root\r')
    await out.until(/root@vm1:~# $/)
    await d.attachVolume('srv-1', { volumeId: 'vol-1', device: '/dev/vdb' })
    await out.until(/virtio_blk: \/dev\/vdb attached \(volume vol-1\)\r\nroot@vm1:~# $/)
    await d.reboot('srv-1', 'SOFT')
    await out.until(/\(boot 2\)[\s\S]*vm1 login: $/)
    term.write('whoami\r')
    await out.until(/vm1 login: whoami\r\nWelcome[^\n]*\r\nwhoami@vm1:~\$ $/, 'whoami taken as a login name after the reboot')
    await d.powerOff('srv-1')
    await out.until(() => out.ended, 'the end of the stream')
    await assert.rejects(d.openConsole('srv-1', 'serial'), (err: DriverError) => err.code === 409 && /not running/.test(err.message))
  })

  it('has no VNC display, and no console for a guest it does not hold', async () => {
    const d = driver()
    await d.spawn(spec())
    await assert.rejects(d.openConsole('srv-1', 'vnc'), (err: DriverError) => err.code === 501 && err.message === 'VNC is not available on simulated hosts.')
    await assert.rejects(d.openConsole('nope', 'serial'), (err: DriverError) => err.code === 404)
    const term = await d.openConsole('srv-1', 'serial')
    const out = reader(term)
    await d.destroy('srv-1')
    await out.until(() => out.ended, 'the end of the stream when the guest is destroyed')
  })
})
