/**
 * All-in-one mode: `PCC_LOCAL_HYPERVISOR=qemu` makes a real pcc-server process run guests on its own machine
 * (an agent inside it, state under the data dir), with no simulated hosts. The server runs in a network namespace
 * of its own (its agent's data plane is the machine's in this mode), reached over the test bridge. Guests outlive
 * a restart of pcc-server and are found again.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { startAllInOne } from '../../src/testkit/all-in-one.js'
import type { ServerProcess } from '../../src/testkit/process.js'
import { qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { qemuProcessesUnder } from '../../src/testkit/qemu-cloud.js'

const PASSWORD = 'all-in-one-admin-password'
const missing = realGuestsMissing() ?? (process.getuid?.() !== 0 ? 'not root (the server runs in a network namespace of its own)' : undefined)

describe('all-in-one: pcc-server runs real guests on its own machine', { skip: missing }, () => {
  let net: TestNetwork
  let dataDir: string
  let server: ServerProcess | undefined
  let api: ComputeClient
  let serverId: string

  const start = async () => {
    ;({ server, api } = await startAllInOne({ host: net.hosts[0], dataDir, password: PASSWORD, env: { PCC_RECONCILE_SECONDS: '5' } }))
  }
  const stop = async () => {
    await server?.stop('SIGTERM')
    server = undefined
  }

  before(async () => {
    net = createTestNetwork(1)
    if (net.sharedBecause) throw new Error(net.sharedBecause)
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-all-in-one-'))
    await start()
  })
  after(async () => {
    await stop()
    for (const pid of qemuProcessesUnder(join(dataDir, 'host'))) process.kill(pid, 'SIGKILL')
    net?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('registers its own machine as the only hypervisor (QEMU) and applies the role itself: no simulated hosts', async () => {
    const hyps = await until('the local hypervisor listed', 60_000, async () => {
      const r = await api.at('2.28').call('GET', '/os-hypervisors/detail')
      return r.body.hypervisors.length ? r.body.hypervisors : undefined
    }, 250)
    assert.equal(hyps.length, 1)
    assert.equal(hyps[0].hypervisor_type, 'QEMU')
    assert.equal(hyps[0].state, 'up')
    assert.ok(existsSync(join(dataDir, 'host/etc/pcc/agent.json')), "the agent's state is under the data dir")
  })

  it('boots a guest from the default image: its own lines in the console log', async () => {
    const image = (await api.other('GET', '/image/v2/images')).body.images.find((i: { name: string }) => i.name === 'pcc-busybox-x86_64')
    assert.ok(image, 'the bootable default image')
    ;({ id: serverId } = await api.create({ name: 'local-vm', imageRef: image.id, flavorRef: '1', networks: 'none' }))
    const s = await until('ACTIVE', 180_000, async () => {
      const v = await api.server(serverId)
      return v && v.status !== 'BUILD' ? v : undefined
    }, 500)
    assert.equal(s.status, 'ACTIVE', JSON.stringify(s.fault))
    await until('the guest ready', 120_000, async () => {
      const out = (await api.action(serverId, 'os-getConsoleOutput', {})).body.output as string
      return /pcc-guest: name local-vm[\s\S]*pcc-guest: ready/.test(out) ? true : undefined
    }, 1000)
  })

  it('keeps the guest through a pcc-server restart and finds it again', async () => {
    await stop()
    assert.equal(qemuProcessesUnder(join(dataDir, 'host')).length, 1, 'the guest runs on without pcc-server')
    await start()
    const s = await until('the server seen again', 60_000, async () => api.server(serverId).catch(() => undefined), 500)
    assert.equal(s.status, 'ACTIVE')
    assert.equal((await api.action(serverId, 'os-stop')).status, 202)
    await until('SHUTOFF', 120_000, async () => ((await api.server(serverId))?.status === 'SHUTOFF' ? true : undefined), 500)
    const out = (await api.action(serverId, 'os-getConsoleOutput', {})).body.output as string
    assert.match(out, /pcc-guest: power button: powering off/, 'stopped gracefully by the guest itself')
    assert.equal((await api.call('DELETE', `/servers/${serverId}`)).status, 204)
    await until('deleted', 60_000, async () => ((await api.server(serverId)) === undefined ? true : undefined), 500)
    assert.deepEqual(qemuLeftovers(join(dataDir, 'host'), serverId), [])
  })
})
