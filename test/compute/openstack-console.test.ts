/**
 * `openstack console url show` (Debian's python3-openstackclient 6.0, which asks through openstacksdk: POST
 * remote-consoles, since the server speaks 2.6) against a server on a simulated host, then connecting to the URL
 * it printed: the serial console answers a
 * typed command; the noVNC page is served and its websocket reaches the host (whose refusal, a simulated host
 * having no display, comes back as the close reason; with the QEMU driver it is the guest's display).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { closedWithin, openConsoleClient } from '../../src/testkit/console-client.js'

describe('openstack console url show', () => {
  let server: TestServer
  let api: ComputeClient
  let serverId: string
  let hostId: string

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' } })
    const admin = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    api = new ComputeClient(server.url, admin)
    serverId = (await api.create({ name: 'cli-con', imageRef: await api.bootImage(), flavorRef: '1', networks: 'none' })).id
    await until('ACTIVE', 30_000, async () => ((await api.server(serverId))?.status === 'ACTIVE' ? true : undefined))
    hostId = (await server.deps.store.db.selectFrom('servers').select('host_id').where('id', '=', serverId).executeTakeFirstOrThrow()).host_id!
  })
  after(() => server?.close())

  const env = () => adminEnv(server)

  it('--serial prints a URL whose console answers a typed command', async () => {
    const shown = await openstackJson<{ type: string; url: string; protocol?: string }>(['console', 'url', 'show', '--serial', 'cli-con'], env())
    assert.equal(shown.type, 'serial')
    assert.match(shown.url, /^ws:\/\/127\.0\.0\.1:\d+\/console\/websocket\?token=[0-9a-f-]{36}$/)
    const client = await openConsoleClient(shown.url)
    await client.until(/cli-con login: $/)
    client.send('admin\r')
    client.send('echo typed through the proxy\r')
    await client.until(/\r\ntyped through the proxy\r\nadmin@cli-con:~\$ $/)
    await client.close()
  })

  it('--novnc prints the noVNC page whose websocket reaches the host', async () => {
    const refused = await openstack(['console', 'url', 'show', '--novnc', 'cli-con'], env())
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /501.*VNC is not available on simulated hosts\./)
    // A host with a display (what the API looks at): the URL as Nova gives it.
    await server.deps.store.db.updateTable('hosts').set({ driver: 'qemu' }).where('id', '=', hostId).execute()
    let shown: { type: string; url: string }
    try {
      shown = await openstackJson(['console', 'url', 'show', '--novnc', 'cli-con'], env())
    } finally {
      await server.deps.store.db.updateTable('hosts').set({ driver: 'simulated' }).where('id', '=', hostId).execute()
    }
    assert.equal(shown.type, 'novnc')
    assert.match(shown.url, /^http:\/\/127\.0\.0\.1:\d+\/console\/vnc\.html\?path=console\/websocket%3Ftoken%3D[0-9a-f-]{36}$/)
    const page = await fetch(shown.url)
    assert.equal(page.status, 200)
    assert.match(await page.text(), /noVNC[\s\S]*<script/)
    const client = await openConsoleClient(shown.url)
    assert.deepEqual(await closedWithin(client), { code: 1011, reason: 'VNC is not available on simulated hosts.' })
  })

  it('--spice and --rdp are refused as Nova refuses them', async () => {
    const spice = await openstack(['console', 'url', 'show', '--spice', 'cli-con'], env())
    assert.notEqual(spice.code, 0)
    assert.match(spice.stderr, /400.*Unavailable console type spice-html5\./)
    const rdp = await openstack(['console', 'url', 'show', '--rdp', 'cli-con'], env())
    assert.notEqual(rdp.code, 0)
    assert.match(rdp.stderr, /400/)
  })
})
