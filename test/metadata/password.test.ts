/**
 * A guest's password through the metadata service (metadata/password.ts), on a real server, on both dialects: the
 * agent's call `POST /resmgr/v1/hosts/{id}/metadata/{port}/openstack/<version>/password` (what the agent's metadata
 * proxy sends for the guest behind that port), read back at `GET …/password` and through the compute API's
 * `/servers/{id}/os-server-password`; one post until it is cleared (409), at most 1,020 bytes (400), for the
 * port's own server only. Hosts are registered through the real registration API; no agent runs.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DIALECTS } from '../../src/testkit/harness.js'
import { call, computeTestbed, createBody, type ComputeTestbed } from '../compute/helpers.js'

interface Host {
  id: string
  hostname: string
  credential: string
}

for (const dialect of DIALECTS) {
  describe(`a guest's password through the metadata service (${dialect})`, () => {
    let tb: ComputeTestbed
    let host: Host
    let otherHost: Host
    let networkId: string

    const api = async (method: string, path: string, auth: string, body?: unknown) => {
      const res = await fetch(`${tb.server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${auth}`, 'x-auth-token': auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      return { status: res.status, body: text ? JSON.parse(text) : undefined }
    }
    const register = async (hostname: string): Promise<Host> => {
      const token = (await api('POST', '/resmgr/v1/registration-tokens', tb.admin.token, {})).body.token
      const id = randomUUID()
      const reg = await api('POST', '/resmgr/v1/hosts/register', '', {
        registration_token: token, host_id: id, hostname, os_info: { id: 'debian', version_id: '12', pretty_name: 'Debian' }, arch: 'x86_64',
        cpu: { count: 4, model: 'x', virtualization: true }, memory_mb: 8000, disk_gb: 100, nics: [], agent_version: '0.1.0',
      })
      assert.equal(reg.status, 201, JSON.stringify(reg.body))
      return { id, hostname, credential: reg.body.credential as string }
    }
    /** A server of the member's project with a port bound to `host`, as the conductor binds it. */
    const serverWithPort = async (name: string, on = host) => {
      const created = await call(tb, tb.member, 'POST', '/servers', createBody(name), '2.37')
      assert.equal(created.status, 202, JSON.stringify(created.body))
      const serverId = created.body.server.id as string
      const port = await api('POST', '/network/v2.0/ports', tb.admin.token, {
        port: { network_id: networkId, project_id: tb.member.projectId, device_id: serverId, device_owner: 'compute:nova', 'binding:host_id': on.hostname },
      })
      assert.equal(port.status, 201, JSON.stringify(port.body))
      return { serverId, portId: port.body.port.id as string }
    }
    /** The agent's call for the guest behind `portId`: a GET, or a POST of `body` (bytes, as the proxy forwards them). */
    const metadata = async (portId: string, path: string, body?: string | Buffer, as = host, auth = as.credential) => {
      const res = await fetch(`${tb.server.url}/resmgr/v1/hosts/${as.id}/metadata/${portId}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${auth}`, ...(body !== undefined && { 'content-type': 'application/octet-stream' }) },
        body: typeof body === 'string' ? Buffer.from(body) : body,
      })
      return { status: res.status, text: await res.text() }
    }
    const serverPassword = async (serverId: string, who = tb.member) => call(tb, who, 'GET', `/servers/${serverId}/os-server-password`)

    before(async () => {
      tb = await computeTestbed(dialect)
      host = await register('compute-pw-1')
      otherHost = await register('compute-pw-2')
      const net = await api('POST', '/network/v2.0/networks', tb.admin.token, { network: { name: 'pw-net', project_id: tb.member.projectId } })
      assert.equal(net.status, 201, JSON.stringify(net.body))
      networkId = net.body.network.id
      const subnet = await api('POST', '/network/v2.0/subnets', tb.admin.token, { subnet: { network_id: networkId, ip_version: 4, cidr: '10.77.0.0/24', project_id: tb.member.projectId } })
      assert.equal(subnet.status, 201, JSON.stringify(subnet.body))
    })
    after(() => tb?.close())

    it('takes one post, serves it back to the guest and through os-server-password, and takes another once cleared', async () => {
      const { serverId, portId } = await serverWithPort('pw-1')
      assert.deepEqual([(await metadata(portId, '/openstack/2013-10-17/password')).status, (await metadata(portId, '/openstack/latest/password')).text], [200, ''])
      assert.deepEqual((await serverPassword(serverId)).body, { password: '' })
      // What cloudbase-init posts: the password encrypted with a 2048-bit key, base64 (344 characters).
      const encrypted = Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('base64')
      assert.equal(encrypted.length, 344)
      assert.deepEqual(await metadata(portId, '/openstack/2013-10-17/password', encrypted), { status: 200, text: '' })
      assert.equal((await metadata(portId, '/openstack/2013-10-17/password')).text, encrypted)
      assert.equal((await metadata(portId, '/openstack/latest/password')).text, encrypted)
      assert.deepEqual((await serverPassword(serverId)).body, { password: encrypted })
      // A second post while one is stored: 409, whatever it holds (too long included, as in Nova), and nothing changes.
      for (const again of ['another', 'x'.repeat(2000)]) assert.equal((await metadata(portId, '/openstack/latest/password', again)).status, 409)
      assert.deepEqual((await serverPassword(serverId)).body, { password: encrypted })
      // Cleared by the user (Nova's clear-password): a new post is taken.
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-server-password`)).status, 204)
      assert.deepEqual((await serverPassword(serverId)).body, { password: '' })
      assert.equal((await metadata(portId, '/openstack/latest/password')).text, '')
      assert.equal((await metadata(portId, '/openstack/latest/password', 'second')).status, 200)
      assert.deepEqual((await serverPassword(serverId)).body, { password: 'second' })
    })

    it('takes at most 1,020 bytes (Nova\'s four items of 255 characters), kept whole; a longer body or one that is not text is 400', async () => {
      const { serverId, portId } = await serverWithPort('pw-size')
      assert.equal((await metadata(portId, '/openstack/latest/password', 'y'.repeat(1021))).status, 400)
      assert.equal((await metadata(portId, '/openstack/latest/password', Buffer.from([0x66, 0xff, 0xfe]))).status, 400)
      assert.deepEqual((await serverPassword(serverId)).body, { password: '' }, 'a refused post stores nothing')
      const longest = Array.from({ length: 1020 }, (_, i) => 'abcdefghij'[i % 10]).join('')
      assert.equal((await metadata(portId, '/openstack/latest/password', longest)).status, 200)
      assert.equal((await serverPassword(serverId)).body.password, longest)
      // Characters of several bytes across the 255-character items come back whole.
      assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${serverId}/os-server-password`)).status, 204)
      const wide = 'é'.repeat(254) + '😀'.repeat(100)
      assert.ok(Buffer.byteLength(wide) <= 1020)
      assert.equal((await metadata(portId, '/openstack/latest/password', wide)).status, 200)
      assert.equal((await metadata(portId, '/openstack/latest/password')).text, wide)
      assert.equal((await serverPassword(serverId)).body.password, wide)
    })

    it('lets two posts at once store one password: the other is 409', async () => {
      const { serverId, portId } = await serverWithPort('pw-race')
      const answers = await Promise.all(['first', 'second'].map((p) => metadata(portId, '/openstack/latest/password', p)))
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409])
      const winner = answers[0].status === 200 ? 'first' : 'second'
      assert.deepEqual((await serverPassword(serverId)).body, { password: winner })
    })

    it("stores a post for the port's own server only, asked by the host the port is bound to", async () => {
      const mine = await serverWithPort('pw-mine')
      const theirs = await serverWithPort('pw-theirs', otherHost)
      // Posts anywhere but …/password, and methods the service has no use for, are refused.
      assert.equal((await metadata(mine.portId, '/openstack/latest/meta_data.json', 'x')).status, 405)
      assert.equal((await metadata(mine.portId, '/latest/meta-data/password', 'x')).status, 405)
      assert.equal((await metadata(mine.portId, '/openstack/1999-01-01/password', 'x')).status, 405)
      // A host posts for the guests bound to it only, with its own credential only.
      assert.equal((await metadata(theirs.portId, '/openstack/latest/password', 'stolen')).status, 404, 'the port is bound to another host')
      assert.equal((await metadata(mine.portId, '/openstack/latest/password', 'stolen', host, otherHost.credential)).status, 403, "another host's credential")
      assert.equal((await metadata(mine.portId, '/openstack/latest/password', 'stolen', host, tb.admin.token)).status, 401, 'a user token, even an admin one')
      assert.deepEqual((await serverPassword(theirs.serverId)).body, { password: '' })
      assert.deepEqual((await serverPassword(mine.serverId)).body, { password: '' })
      // Each guest's post lands on its own server.
      assert.equal((await metadata(mine.portId, '/openstack/latest/password', 'mine')).status, 200)
      assert.equal((await metadata(theirs.portId, '/openstack/latest/password', 'theirs', otherHost)).status, 200)
      assert.deepEqual((await serverPassword(mine.serverId)).body, { password: 'mine' })
      assert.deepEqual((await serverPassword(theirs.serverId)).body, { password: 'theirs' })
    })

    it("shows and clears a server's password for its own project only: another project's server is 404", async () => {
      const { serverId, portId } = await serverWithPort('pw-project')
      assert.equal((await metadata(portId, '/openstack/latest/password', 'secret')).status, 200)
      assert.equal((await serverPassword(serverId, tb.other)).status, 404)
      assert.equal((await call(tb, tb.other, 'DELETE', `/servers/${serverId}/os-server-password`)).status, 404)
      assert.equal((await call(tb, tb.reader, 'DELETE', `/servers/${serverId}/os-server-password`)).status, 403)
      assert.deepEqual((await serverPassword(serverId, tb.reader)).body, { password: 'secret' })
      assert.deepEqual((await serverPassword(serverId, tb.admin)).body, { password: 'secret' })
      assert.equal((await metadata(portId, '/openstack/latest/password', 'another')).status, 409, 'refused clears left it stored')
    })
  })
}
