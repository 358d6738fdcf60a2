/**
 * The agent's metadata proxy (src/host/network/metadata-proxy.ts) without namespaces: its request handler served on
 * loopback, the port found from the source address, and a stand-in for the control plane that records what it is
 * asked. GETs and a guest's POST (its password) travel the same way, for the port the source address belongs to.
 * And in real namespaces: a network leaving the host takes its namespace with it, even when a guest vanished in the
 * middle of a connection.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DataplanePort, HostNetworkState } from '../../../src/contracts/network/dataplane.js'
import { listenInNamespace, MAX_POST_BYTES, MetadataProxy, type MetadataAnswer } from '../../../src/host/network/metadata-proxy.js'
import { Namespaces } from '../../../src/host/network/linux/namespaces.js'
import { until } from '../../../src/testkit/compute-api.js'
import { dataplaneMissing } from '../../../src/testkit/dataplane-cluster.js'

const port = (id: string, ipAddress: string): DataplanePort => ({
  id, networkId: 'net-1', deviceId: `server-of-${id}`, mac: 'fa:16:3e:00:00:01', fixedIps: [{ subnetId: 'sub-1', ipAddress }], adminStateUp: true, portSecurityEnabled: true,
  allowedAddressPairs: [], securityGroupIds: [],
})
const state: HostNetworkState = { tunnelIp: null, networks: [], ports: [port('port-a', '127.0.0.1'), port('port-b', '127.0.0.2')], securityGroups: [], groupMembers: [], routers: [] }

describe("the agent's metadata proxy", () => {
  const asked: { portId: string; path: string; body?: string }[] = []
  let answer: MetadataAnswer = { status: 200, contentType: 'text/plain', body: Buffer.from('') }
  let server: Server
  let url: URL

  before(async () => {
    const proxy = new MetadataProxy(
      async (portId, path, body) => {
        asked.push({ portId, path, ...(body && { body: body.toString() }) })
        return answer
      },
      () => {},
    )
    // No namespace: the state only, so the proxy knows the ports.
    await proxy.converge(state, new Map())
    server = createServer(proxy.handler('net-1'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  })
  after(() => new Promise((resolve) => server.close(resolve)))

  const send = (method: string, path: string, body?: Buffer | string, localAddress = '127.0.0.1') =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, method, path, localAddress, headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }))
      })
      // The proxy may answer before it read a body it refuses; the socket closing then is expected.
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)))
      req.end(body)
    })

  it('forwards a GET for the port whose address the request comes from', async () => {
    asked.length = 0
    answer = { status: 200, contentType: 'application/json', body: Buffer.from('{"uuid":"x"}') }
    assert.deepEqual(await send('GET', '/openstack/latest/meta_data.json'), { status: 200, text: '{"uuid":"x"}' })
    assert.deepEqual(await send('GET', '/openstack/latest/meta_data.json', undefined, '127.0.0.2'), { status: 200, text: '{"uuid":"x"}' })
    assert.deepEqual(asked, [
      { portId: 'port-a', path: '/openstack/latest/meta_data.json' },
      { portId: 'port-b', path: '/openstack/latest/meta_data.json' },
    ])
  })

  it("forwards a guest's POST with its body, for its own port, and gives it the control plane's answer", async () => {
    asked.length = 0
    answer = { status: 200, contentType: 'text/plain; charset=UTF-8', body: Buffer.from('') }
    assert.equal((await send('POST', '/openstack/2013-10-17/password', 'c2VjcmV0')).status, 200)
    assert.equal((await send('POST', '/openstack/latest/password', 'from-b', '127.0.0.2')).status, 200)
    assert.deepEqual(asked, [
      { portId: 'port-a', path: '/openstack/2013-10-17/password', body: 'c2VjcmV0' },
      { portId: 'port-b', path: '/openstack/latest/password', body: 'from-b' },
    ])
    answer = { status: 409, contentType: 'text/plain; charset=UTF-8', body: Buffer.from('409 Conflict\n') }
    assert.deepEqual(await send('POST', '/openstack/latest/password', 'again'), { status: 409, text: '409 Conflict\n' })
    // The path is resolved within the tree for a POST too.
    asked.length = 0
    await send('POST', '/../../network/../openstack/latest/password', 'x')
    assert.deepEqual(asked, [{ portId: 'port-a', path: '/openstack/latest/password', body: 'x' }])
  })

  it('refuses a body over its limit, methods other than GET, HEAD and POST, and addresses of no port, without asking the control plane', async () => {
    asked.length = 0
    assert.equal((await send('POST', '/openstack/latest/password', Buffer.alloc(MAX_POST_BYTES + 1, 0x61))).status, 400)
    assert.equal((await send('PUT', '/openstack/latest/password', 'x')).status, 405)
    assert.equal((await send('DELETE', '/openstack/latest/password')).status, 405)
    assert.equal((await send('POST', '/openstack/latest/password', 'x', '127.0.0.3')).status, 404, 'an address of no port of the network')
    assert.equal(asked.length, 0)
    answer = { status: 200, contentType: 'text/plain; charset=UTF-8', body: Buffer.from('') }
    assert.equal((await send('POST', '/openstack/latest/password', Buffer.alloc(MAX_POST_BYTES, 0x61))).status, 200)
    assert.equal(asked[0].body?.length, MAX_POST_BYTES)
  })
})

describe("the agent's metadata proxy in a DHCP namespace", { skip: dataplaneMissing() }, () => {
  // A host (its bridge), the network's DHCP namespace on it, and a guest: each a namespace of this test's own.
  const tag = randomBytes(3).toString('hex')
  const [host, dhcp, guest] = ['h', 'd', 'g'].map((n) => `pcc-md${tag}-${n}`)
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString()
  const hostHas = (device: string) => ip('-n', host, '-j', 'link', 'show').includes(`"${device}"`)

  before(() => {
    for (const n of [host, dhcp, guest]) ip('netns', 'add', n)
    ip('-n', host, 'link', 'add', 'br0', 'type', 'bridge')
    ip('-n', host, 'link', 'add', 'tapdhcp', 'type', 'veth', 'peer', 'name', 'ns0', 'netns', dhcp)
    ip('-n', host, 'link', 'add', 'tapguest', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', guest)
    for (const l of ['br0', 'tapdhcp', 'tapguest']) ip('-n', host, 'link', 'set', l, ...(l === 'br0' ? [] : ['master', 'br0']), 'up')
    ip('-n', dhcp, 'addr', 'add', '10.9.0.2/24', 'dev', 'ns0')
    ip('-n', dhcp, 'addr', 'add', '169.254.169.254/32', 'dev', 'ns0')
    ip('-n', dhcp, 'link', 'set', 'ns0', 'up')
    ip('-n', guest, 'addr', 'add', '10.9.0.5/24', 'dev', 'eth0')
    ip('-n', guest, 'link', 'set', 'eth0', 'up')
    ip('-n', guest, 'route', 'add', '169.254.169.254', 'via', '10.9.0.2')
  })
  after(() => {
    for (const n of [guest, dhcp, host]) {
      try {
        ip('netns', 'del', n)
      } catch {
        // the test deleted it
      }
    }
  })

  it('resets the connections of a network that left the host, so its namespace goes even when a guest vanished mid-connection', async () => {
    const proxy = new MetadataProxy(async () => ({ status: 200, contentType: 'text/plain', body: Buffer.from('i-0001') }), () => {})
    const served: HostNetworkState = { ...state, ports: [port('port-g', '10.9.0.5')] }
    await proxy.converge(served, new Map([['net-1', `/run/netns/${dhcp}`]]))
    // The guest asks once and keeps its connection open (HTTP keep-alive), as a guest's metadata client may.
    const client = spawn('ip', ['netns', 'exec', guest, process.execPath, '-e', `
      const s = require('net').connect(80, '169.254.169.254', () => s.write('GET /latest/meta-data/instance-id HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'))
      s.on('data', (d) => process.stdout.write(d)); setTimeout(() => {}, 60000)`], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      let seen = ''
      client.stdout!.on('data', (d: Buffer) => (seen += d))
      await until('the answer in the guest', 10_000, async () => (seen.includes('i-0001') ? true : undefined), 100)
      // The guest vanishes without a word (its QEMU killed): nothing of it answers any more.
      ip('-n', host, 'link', 'set', 'tapguest', 'down')
      await proxy.converge({ ...served, ports: [] }, new Map())
      ip('netns', 'del', dhcp)
      await until('the DHCP namespace gone, and its veth end with it', 10_000, async () => (hostHas('tapdhcp') ? undefined : true), 200)
    } finally {
      client.kill('SIGKILL')
    }
  })

  it("removes a namespace's veths with it at once, even while a socket inside keeps the namespace alive", async () => {
    const root = mkdtempSync(join(tmpdir(), 'pcc-netns-'))
    const namespaces = new Namespaces(root)
    const name = `qdhcp-${crypto.randomUUID()}`
    const file = await namespaces.ensure(name)
    ip('-n', host, 'link', 'add', 'tapheld', 'type', 'veth', 'peer', 'name', 'ns-held', 'netns', file)
    // The agent's kind of socket: opened inside, held outside.
    const socket = await listenInNamespace(file, '127.0.0.1')
    try {
      await namespaces.remove(name)
      assert.equal(hostHas('tapheld'), false, "the veth's host end went with the namespace")
    } finally {
      socket.close()
      rmSync(root, { recursive: true, force: true })
    }
  })
})
