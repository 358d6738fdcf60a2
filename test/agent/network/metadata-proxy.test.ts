/**
 * The agent's metadata proxy (src/host/network/metadata-proxy.ts) without namespaces: its request handler served on
 * loopback, the port found from the source address, and a stand-in for the control plane that records what it is
 * asked. GETs and a guest's POST (its password) travel the same way, for the port the source address belongs to.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DataplanePort, HostNetworkState } from '../../../src/contracts/network/dataplane.js'
import { MAX_POST_BYTES, MetadataProxy, type MetadataAnswer } from '../../../src/host/network/metadata-proxy.js'

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
