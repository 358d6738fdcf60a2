/**
 * The proxy carrying a real QEMU display through Tempest's exact websocket and RFB negotiation
 * (test_novnc.py): a QEMU process (stopped CPU, no disk: only its VGA display matters) serves VNC on a unix
 * socket, as the QEMU driver runs guests, and the host's driver hands that socket to the proxy. Everything
 * else is the real path: the compute API's novnc URL, the noVNC page, the upgrade Tempest writes byte for byte,
 * one small websocket frame per RFB message. (The QEMU driver's own end-to-end test adds the guest and the agent.)
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ComputeDriver } from '../../src/contracts/host/compute-driver.js'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'
import { until } from '../../src/testkit/compute-api.js'
import { tempestRfbNegotiation, tempestWebSocket } from '../../src/testkit/console-client.js'

const QEMU = 'qemu-system-x86_64'
const missing = spawnSync(QEMU, ['--version']).error ? `${QEMU} not installed` : false

describe('a real QEMU display through the console proxy', { skip: missing }, () => {
  let tb: ComputeTestbed
  let qemu: ChildProcess | undefined
  let dir: string
  let serverId: string

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pcc-vnc-'))
    const vnc = join(dir, 'vnc.sock')
    qemu = spawn(QEMU, ['-nodefaults', '-machine', 'pc,accel=tcg', '-m', '32', '-vga', 'std', '-display', 'none', '-name', 'vnc-proxy-test', '-vnc', `unix:${vnc}`, '-S'], { stdio: 'ignore' })
    await until('QEMU listening on its VNC socket', 20_000, async () => (existsSync(vnc) ? true : undefined))
    tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' }, true, { publicUrlFromListen: true })
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('display'), '2.96')
    serverId = created.body.server.id
    await until('ACTIVE', 30_000, async () => ((await call(tb, tb.member, 'GET', `/servers/${serverId}`, undefined, '2.96')).body.server.status === 'ACTIVE' ? true : undefined))
    // The host runs its guests' displays on unix sockets, as the QEMU driver does; everything else stays simulated.
    const host = tb.server.deps.conductor.simulatedHosts[0]
    const simulated = host.driver
    const withDisplay = new Proxy(simulated, {
      get: (target, key) => (key === 'openConsole' ? async () => connect(vnc) : Reflect.get(target, key)),
    }) as ComputeDriver
    tb.server.deps.conductor.drivers.set(host.hostId, withDisplay)
    await tb.server.deps.store.db.updateTable('hosts').set({ driver: 'qemu' }).where('id', '=', host.hostId).execute()
  })
  after(async () => {
    qemu?.kill('SIGKILL')
    await tb?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("negotiates RFB with QEMU's display exactly as Tempest's test_novnc does", async () => {
    const r = await call(tb, tb.member, 'POST', `/servers/${serverId}/remote-consoles`, { remote_console: { protocol: 'vnc', type: 'novnc' } }, '2.96')
    assert.equal(r.status, 200, JSON.stringify(r.body))
    const url = r.body.remote_console.url as string
    const page = await (await fetch(url)).text()
    assert.ok(/<html.*>/.test(page) && page.includes('</html>') && page.includes('noVNC') && page.includes('<script'), 'the noVNC page')
    const ws = await tempestWebSocket(url)
    try {
      assert.equal(ws.statusLine, 'HTTP/1.1 101 Switching Protocols')
      const rfb = await tempestRfbNegotiation(ws)
      assert.equal(rfb.version, 'RFB 003.008\n')
      assert.ok(rfb.securityTypes.includes(1))
      assert.match(rfb.desktopName, /vnc-proxy-test/)
    } finally {
      ws.close()
    }
    // Tempest's bad-token variant: the proxy closes and sends nothing.
    const bad = await tempestWebSocket(url.replace('token%3D', 'token%3Dbad'))
    assert.match(bad.statusLine, /^HTTP\/1\.1 401 /)
    assert.equal(await bad.receiveFrame(2000), null)
    bad.close()
    await until('the proxy let go', 5000, async () => (tb.server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })
})
