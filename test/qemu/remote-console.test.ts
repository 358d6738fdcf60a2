/**
 * Remote consoles of a real guest, end to end: a pcc server, an agent host running the QEMU driver
 * (testkit/qemu-cloud.ts), a server booted from the default image (the pcc guest image). Then what a user does: `openstack console url
 * show --serial` and a websocket to the URL it printed — the guest's busybox shell answers what is typed, with the
 * guest's own facts (its hostname from the config drive, its kernel); `openstack console url show --novnc` — the
 * noVNC page, and Tempest's exact websocket and RFB negotiation (test_novnc.py) with the guest's real display,
 * carried from QEMU's unix socket through the agent's outbound websocket and the proxy.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { until } from '../../src/testkit/compute-api.js'
import { openConsoleClient, tempestRfbNegotiation, tempestWebSocket } from '../../src/testkit/console-client.js'
import { adminEnv, openstackJson } from '../../src/testkit/openstack.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { defaultImageName } from '../../src/server/image/default-image.js'

const BOOT_MS = 180_000

describe('remote consoles of a real guest through an agent host', { skip: realGuestsMissing() }, () => {
  let cloud: QemuCloud
  let serverId: string

  before(async () => {
    cloud = await startQemuCloud({ hosts: 1 })
    const image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id as string
    serverId = (await cloud.api.create({ name: 'console-vm', imageRef: image, flavorRef: '1', networks: 'none' })).id
    const view = await until('the guest ACTIVE', BOOT_MS, async () => {
      const s = await cloud.api.server(serverId)
      return s && s.status !== 'BUILD' ? s : undefined
    }, 500)
    assert.equal(view.status, 'ACTIVE', JSON.stringify(view.fault))
    await until("the guest's own ready line in its console log", BOOT_MS, async () => {
      const log = await cloud.api.action(serverId, 'os-getConsoleOutput', {})
      return /pcc-guest: ready/.test(log.body?.output ?? '') ? true : undefined
    }, 1000)
  })
  after(() => cloud?.close())

  it('openstack console url show --serial: the guest shell answers what is typed, with its own facts', async () => {
    const shown = await openstackJson<{ type: string; url: string }>(['console', 'url', 'show', '--serial', 'console-vm'], adminEnv(cloud.server))
    assert.equal(shown.type, 'serial')
    const client = await openConsoleClient(shown.url, { protocols: ['binary'] })
    try {
      // The shell may be busy printing when we connect: type until it answers (as Tempest's serial test does).
      const deadline = Date.now() + 60_000
      while (!/pcc-console-42 answered/.test(client.text()) && Date.now() < deadline) {
        client.send('echo pcc-console-$((6*7)) answered\r')
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
      assert.match(client.text(), /pcc-console-42 answered/, `the guest's shell evaluated what was typed; it sent:\n${client.text()}`)
      client.send('echo "name=$(hostname) kernel=$(uname -r)"\r')
      await client.until(/name=console-vm kernel=6\.\d+\.\d+-\d+-cloud-amd64/, 30_000)
    } finally {
      await client.close()
    }
    await until('the proxy let go', 10_000, async () => (cloud.server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })

  it("openstack console url show --novnc: the noVNC page, and Tempest's RFB negotiation with the guest's display", async () => {
    const shown = await openstackJson<{ type: string; url: string }>(['console', 'url', 'show', '--novnc', 'console-vm'], adminEnv(cloud.server))
    assert.equal(shown.type, 'novnc')
    const page = await (await fetch(shown.url)).text()
    assert.ok(/<html.*>/.test(page) && page.includes('</html>') && page.includes('noVNC') && page.includes('<script'), 'the noVNC page')
    const ws = await tempestWebSocket(shown.url)
    try {
      assert.equal(ws.statusLine, 'HTTP/1.1 101 Switching Protocols')
      const rfb = await tempestRfbNegotiation(ws)
      assert.equal(rfb.version, 'RFB 003.008\n')
      assert.ok(rfb.securityTypes.includes(1), 'security type None')
      assert.ok(rfb.desktopName.length > 0, 'the display names itself')
    } finally {
      ws.close()
    }
    const bad = await tempestWebSocket(shown.url.replace('token%3D', 'token%3Dbad'))
    assert.match(bad.statusLine, /^HTTP\/1\.1 401 /)
    assert.equal(await bad.receiveFrame(2000), null, 'nothing for a bad token')
    bad.close()
    await until('the proxy let go', 10_000, async () => (cloud.server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })
})
