/** The driver conformance suite over the simulated driver (in memory; its console says `boot N`). */
import type { ComputeDriver, GuestSpec } from '../../src/contracts/host/compute-driver.js'
import { SimulatedDriver } from '../../src/host/compute/simulated/simulated-driver.js'
import { driverConformance } from '../../src/host/compute/conformance/suite.js'

const FLAVOR = { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} }

const spec = (serverId: string, flavor = {}): GuestSpec => ({
  serverId,
  instanceName: 'instance-00000001',
  flavor: { ...FLAVOR, ...flavor },
  imageId: 'image-1',
  hostname: 'vm1',
  userData: null,
})

const host = (hostname: string) => new SimulatedDriver({ hostname, vcpus: 8, memoryMb: 16384, diskGb: 100, delayMs: 0, failureRate: 0 })

/** The number of the last boot of the guest's own disk its console shows. */
async function boots(d: ComputeDriver, id: string): Promise<number> {
  const seen = [...(await d.consoleOutput(id)).matchAll(/\(boot (\d+)\)/g)]
  return Number(seen.at(-1)?.[1] ?? 0)
}

driverConformance('simulated', async () => ({
  hosts: async () => [host('sim-a'), host('sim-b')],
  spec,
  failingSpawn: (driver, id) => {
    ;(driver as SimulatedDriver).injectFailures(0, { spawn: 'the hypervisor refused the guest' })
    return spec(id)
  },
  booted: async (d, id, n) => {
    const seen = await boots(d, id)
    if (seen !== n) throw new Error(`the console shows boot ${seen}, not ${n}`)
  },
  boots,
  continues: async () => {},
  slowLiveMigrations: (d, slow) => {
    ;(d as SimulatedDriver).liveMigrationMs = slow ? 20_000 : undefined
  },
  leftovers: async (d, id) => ((await d.info(id)) ? [`guest ${id}`] : []),
  volume: async () => ({ volumeId: '00000000-0000-4000-8000-0000000000a1', device: '/dev/vdb' }),
  nic: async () => ({ portId: '00000000-0000-4000-8000-0000000000b1', macAddress: 'fa:16:3e:00:00:b1', networkId: '00000000-0000-4000-8000-0000000000b2', mtu: 1450 }),
  disksMove: false,
  close: async () => {},
}))
