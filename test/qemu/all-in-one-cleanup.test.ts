/**
 * Tearing an all-in-one down, as the operator does: a real pcc-server with `PCC_LOCAL_HYPERVISOR=qemu` (in a network
 * namespace made here, its data dir a scratch folder) runs a guest on a network with DHCP and a router, then stops;
 * the guest outlives it, as it should. `pcc-server cleanup` refuses while the server runs, `--keep-guests` removes
 * the data plane but leaves the guest, a start on another data dir warns about that guest, and a plain `cleanup`
 * stops it: nothing of pcc is left on the machine — no QEMU, bridge, tap, namespace, dnsmasq, nftables table or
 * mount under the data dir — and `rm -rf` of the data dir works.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startAllInOne } from '../../src/testkit/all-in-one.js'
import { until, type ComputeClient } from '../../src/testkit/compute-api.js'
import { dataplaneMissing } from '../../src/testkit/dataplane-cluster.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { RemoteLinuxBackend } from '../../src/testkit/network-backend-host.js'
import { SERVER_MAIN, spawnServer, type ServerProcess } from '../../src/testkit/process.js'
import { qemuProcessesUnder, realGuestsMissing } from '../../src/testkit/qemu.js'

const PASSWORD = 'all-in-one-cleanup-password'
const EMPTY = JSON.stringify({ bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] })
const missing = realGuestsMissing() ?? dataplaneMissing()

const mountsUnder = (dir: string) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((p) => p?.startsWith(`${dir}/`))

describe('pcc-server cleanup: an all-in-one torn down', { skip: missing }, () => {
  let net: TestNetwork
  let dataDir: string
  let otherDataDir: string
  let server: ServerProcess | undefined
  let api: ComputeClient
  let token: string
  let url: string

  /** `pcc-server cleanup …` run to its end in the test machine's network namespace, as root at its shell. */
  const cleanup = async (dir: string, ...args: string[]) => {
    const run = spawnServer({ PCC_DATA_DIR: dir }, ['cleanup', ...args], { command: ['nsenter', `--net=/run/netns/${net.hosts[0].namespace}`, '--', process.execPath, SERVER_MAIN] })
    const code = await run.exited()
    return { code, stdout: run.stdout(), stderr: run.stderr() }
  }
  const inventory = async () => {
    const backend = new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    try {
      return JSON.stringify(await backend.inventory())
    } finally {
      await backend.close()
    }
  }
  const nftTables = () => execFileSync('nsenter', [`--net=/run/netns/${net.hosts[0].namespace}`, '--', 'nft', 'list', 'tables']).toString()

  before(async () => {
    net = createTestNetwork(1)
    if (net.sharedBecause) throw new Error(net.sharedBecause)
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-cleanup-'))
    otherDataDir = mkdtempSync(join(tmpdir(), 'pcc-cleanup-other-'))
    ;({ server, url, token, api } = await startAllInOne({ host: net.hosts[0], dataDir, password: PASSWORD, env: { PCC_TERMINAL: 'on' } }))
  })
  after(async () => {
    await server?.stop('SIGTERM')
    for (const dir of [dataDir, otherDataDir]) {
      for (const pid of qemuProcessesUnder(join(dir, 'host'))) process.kill(pid, 'SIGKILL')
      await cleanup(dir).catch(() => undefined)
    }
    net?.close()
    for (const dir of [dataDir, otherDataDir]) rmSync(dir, { recursive: true, force: true })
  })

  const neutron = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/network/v2.0${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`)
    return text ? JSON.parse(text) : undefined
  }

  it('stops the guests and removes the data plane and the mounts, so the data dir can be removed', async () => {
    await until('the local host with both roles', 120_000, async () => {
      const r = await fetch(`${url}/resmgr/v1/hosts`, { headers: { 'x-auth-token': token } })
      const list = (await r.json()) as { role_status: string; roles: string[] }[]
      return list.length === 1 && list[0].roles.includes('network') && list[0].role_status === 'ok' ? true : undefined
    }, 500)
    const network = (await neutron('POST', '/networks', { network: { name: 'tenant' } })).network
    const subnet = (await neutron('POST', '/subnets', { subnet: { network_id: network.id, ip_version: 4, cidr: '10.63.0.0/24' } })).subnet
    const router = (await neutron('POST', '/routers', { router: { name: 'edge' } })).router
    await neutron('PUT', `/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id })
    const image = (await api.other('GET', '/image/v2/images')).body.images.find((i: { name: string }) => i.name === 'pcc-busybox-x86_64')
    const { id } = await api.create({ name: 'left-running', imageRef: image.id, flavorRef: '1', networks: [{ uuid: network.id }] })
    await until('the guest ACTIVE', 180_000, async () => ((await api.server(id))?.status === 'ACTIVE' ? true : undefined), 500)
    const root = join(dataDir, 'host')
    assert.equal(qemuProcessesUnder(root).length, 1)
    await until('DHCP and the router in place', 60_000, async () => {
      const inv = JSON.parse(await inventory()) as { namespaces: string[]; dhcpServers: string[] }
      return inv.namespaces.length === 2 && inv.dhcpServers.length === 1 ? true : undefined
    }, 500)
    assert.ok(mountsUnder(dataDir).length >= 2, 'the namespaces are mounts under the data dir')
    assert.match(nftTables(), /table (bridge|inet) pcc/)
    // In a terminal the agent's heartbeats and polls stay out of sight: the JSON log (with them at debug) is in a file.
    assert.doesNotMatch(server!.stdout() + server!.stderr(), /heartbeat|"level":30/)
    assert.doesNotMatch(readFileSync(join(dataDir, 'log/pcc-server.log'), 'utf8'), /\/heartbeat"/, 'successful heartbeats are not in the info log')

    const busy = await cleanup(dataDir)
    assert.equal(busy.code, 2, busy.stderr)
    assert.match(busy.stderr, /^pcc-server: error: a pcc-server \(pid \d+\) is using .*: stop it first/)
    assert.equal(qemuProcessesUnder(root).length, 1, 'a refused clean-up changes nothing')

    assert.equal(await server!.stop('SIGTERM'), 0)
    server = undefined
    assert.equal(qemuProcessesUnder(root).length, 1, 'the guest outlives pcc-server')

    const kept = await cleanup(dataDir, '--keep-guests')
    assert.equal(kept.code, 0, kept.stderr)
    assert.match(kept.stdout, /guests: 1 kept running/)
    assert.equal(await inventory(), EMPTY)
    assert.equal(qemuProcessesUnder(root).length, 1, '--keep-guests keeps the guest')

    const other = await startAllInOne({ host: net.hosts[0], dataDir: otherDataDir, password: PASSWORD })
    await other.server.stop('SIGTERM')
    // The command as it runs here: `pcc-server` once installed on PATH, else node and this checkout's main.js.
    const main = SERVER_MAIN.replace(/[.*+?^$()|[\]\\]/g, '\\$&')
    const command = `(pcc-server|node ${main})`
    assert.match(other.server.stderr(), new RegExp(`pcc-server: warning: 1 guest\\(s\\) of another data dir \\(${dataDir}\\) are running, unmanaged by this start: \`${command} cleanup --data-dir ${dataDir}\``))

    const done = await cleanup(dataDir)
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stdout, /guests: 1 stopped/)
    assert.deepEqual(qemuProcessesUnder(root), [])
    assert.equal(await inventory(), EMPTY)
    assert.doesNotMatch(nftTables(), /pcc/)
    assert.deepEqual(mountsUnder(dataDir), [])
    rmSync(dataDir, { recursive: true })
  })
})
