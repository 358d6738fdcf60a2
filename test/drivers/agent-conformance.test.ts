/**
 * The driver conformance suite over AgentDriver: every call a command on a real pcc-server's command channel
 * (127.0.0.1), executed by a real PccAgent (in this process, with the simulated driver) that registered with a
 * token and took the hypervisor role, as an onboarded host does.
 */
import type { ComputeDriver, GuestSpec } from '../../src/contracts/host/compute-driver.js'
import { rmSync } from 'node:fs'
import { PccAgent } from '../../src/host/agent/agent.js'
import type { SimulatedDriver } from '../../src/host/compute/simulated/simulated-driver.js'
import { driverConformance } from '../../src/host/compute/conformance/suite.js'
import { scratchHost, type ScratchHost } from '../../src/testkit/agent.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { startTestServer } from '../../src/testkit/harness.js'

const FLAVOR = { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} }

const spec = (serverId: string, flavor = {}): GuestSpec => ({
  serverId,
  instanceName: 'instance-00000001',
  flavor: { ...FLAVOR, ...flavor },
  imageId: 'image-1',
  hostname: 'vm1',
  userData: null,
})

/** The number of the last boot of the guest's own disk its console shows. */
async function boots(d: ComputeDriver, id: string): Promise<number> {
  const seen = [...(await d.consoleOutput(id)).matchAll(/\(boot (\d+)\)/g)]
  return Number(seen.at(-1)?.[1] ?? 0)
}

driverConformance('agent', async () => {
  const server = await startTestServer({ publicUrlFromListen: true, env: { PCC_HOST_DOWN_AFTER_SECONDS: '30', PCC_RECONCILE_SECONDS: '0' } })
  const admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  const api = new ComputeClient(server.url, admin)
  const hosts: ScratchHost[] = []
  const agents = new Map<ComputeDriver, PccAgent>()
  const running: Promise<void>[] = []
  const close = async () => {
    for (const agent of agents.values()) agent.stop()
    await Promise.allSettled(running)
    await server.close()
    for (const h of hosts) rmSync(h.root, { recursive: true, force: true })
  }
  try {
    for (const hostname of ['agent-conf-a', 'agent-conf-b']) {
      const token = await api.other('POST', '/resmgr/v1/registration-tokens', { note: hostname })
      const host = scratchHost({ hostname, controller: server.url, registrationToken: token.body.token, delayMs: 0 })
      hosts.push(host)
      const agent = new PccAgent(host.root, '0.0.0-test')
      running.push(agent.run())
      await until(`${hostname} to register`, 20_000, async () => ((await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).status === 200 ? true : undefined))
      await api.other('PUT', `/resmgr/v1/hosts/${host.hostId}/roles/hypervisor`, {})
      await until(`${hostname}'s hypervisor role`, 20_000, async () => ((await api.other('GET', `/resmgr/v1/hosts/${host.hostId}`)).body.role_status === 'ok' ? true : undefined))
      const driver = await server.deps.conductor.drivers.find(host.hostId)
      if (!driver) throw new Error(`no driver for ${hostname} in the control plane`)
      agents.set(driver, agent)
    }
  } catch (err) {
    await close()
    throw err
  }
  const [a, b] = [...agents.keys()]
  return {
    hosts: async () => [a, b],
    spec,
    failingSpawn: (driver, id) => {
      ;(agents.get(driver)!.computeDriver as SimulatedDriver).injectFailures(0, { spawn: 'the hypervisor refused the guest' })
      return spec(id)
    },
    booted: async (d, id, n) => {
      const seen = await boots(d, id)
      if (seen !== n) throw new Error(`the console shows boot ${seen}, not ${n}`)
    },
    boots,
    continues: async () => {},
    slowLiveMigrations: (d, slow) => {
      ;(agents.get(d)!.computeDriver as SimulatedDriver).liveMigrationMs = slow ? 20_000 : undefined
    },
    leftovers: async (d, id) => ((await d.info(id)) ? [`guest ${id}`] : []),
    volume: async () => ({ volumeId: '00000000-0000-4000-8000-0000000000a1', device: '/dev/vdb' }),
    nic: async () => ({ portId: '00000000-0000-4000-8000-0000000000b1', macAddress: 'fa:16:3e:00:00:b1', networkId: '00000000-0000-4000-8000-0000000000b2', mtu: 1450 }),
    images: {
      queued: async () => {
        const image = await api.other('POST', '/image/v2/images', { name: 'conformance-snapshot', disk_format: 'qcow2', container_format: 'bare' })
        if (image.status !== 201) throw new Error(`image create: ${image.status} ${JSON.stringify(image.body)}`)
        return image.body.id as string
      },
      bytes: async (imageId) => {
        const res = await fetch(`${server.url}/image/v2/images/${imageId}/file`, { headers: { 'x-auth-token': admin } })
        if (res.status !== 200) throw new Error(`image ${imageId} download: ${res.status} ${await res.text()}`)
        return Buffer.from(await res.arrayBuffer())
      },
    },
    disksMove: false,
    close,
  }
})
