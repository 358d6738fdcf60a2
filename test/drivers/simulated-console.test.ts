/** The console conformance suite (console-conformance.ts) over the simulated driver. */
import { describe } from 'node:test'
import { SimulatedDriver } from '../../src/host/compute/simulated/simulated-driver.js'
import { consoleConformance } from '../../src/host/compute/conformance/console-suite.js'

describe('simulated driver consoles (conformance)', () => {
  consoleConformance(async () => {
    const driver = new SimulatedDriver({ hostname: 'sim', vcpus: 4, memoryMb: 4096, diskGb: 40, delayMs: 0, failureRate: 0 })
    const serverId = '6f1c1c1e-0000-4000-8000-000000000001'
    await driver.spawn({
      serverId,
      instanceName: 'instance-00000001',
      flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
      imageId: null,
      hostname: 'conf',
      userData: null,
    })
    return { driver, serverId, answerMs: 2000 }
  })
})
