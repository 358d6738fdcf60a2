import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DriverError, type GuestSpec } from '../../src/server/drivers/compute/driver.js'
import { SimulatedDriver } from '../../src/server/drivers/compute/simulated/simulated-driver.js'

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
    await a.liveMigrate(spec(), b)
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
