/**
 * Remote consoles of a real guest, end to end: a pcc server, an agent host running the QEMU driver
 * (testkit/qemu-cloud.ts), a server booted from the default image (the pcc guest image). Then what a user does: `openstack console url
 * show --serial` and a websocket to the URL it printed — the guest's busybox shell answers what is typed, with the
 * guest's own facts (its hostname from the config drive, its kernel); `openstack console url show --novnc` — the
 * noVNC page, and Tempest's exact websocket and RFB negotiation (test_novnc.py) with the guest's real display,
 * carried from QEMU's unix socket through the agent's outbound websocket and the proxy. Then the same in Debian's
 * Chromium: the web console's server page opens the noVNC page in a new tab, which draws the guest's display (its
 * VGA text console: the shell on tty1) and types into it — the guest's shell runs what was typed and writes it to its
 * serial port, where the console log shows it (docs/console/vnc-console.png is this test's screenshot). Last, the
 * guest's own load in the server's Metrics tab: a CPU loop and a disk writer typed into its serial console show
 * on the CPU and disk charts.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import type { Page } from 'playwright-core'
import { browserMissing, launchBrowser } from '../../src/testkit/browser.js'
import { until } from '../../src/testkit/compute-api.js'
import { openConsoleClient, tempestRfbNegotiation, tempestWebSocket } from '../../src/testkit/console-client.js'
import { adminEnv, openstackJson } from '../../src/testkit/openstack.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { processStats } from '../../src/host/compute/qemu/guest-metrics.js'
import { SAMPLE_INTERVAL_MS } from '../../src/contracts/host/metrics.js'
import { drawnChartScript, drawnValues, logIn, menu, screenshotDir, shot, type DrawnChart } from '../console/helpers.js'

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

  it('the web console opens the noVNC page, which shows the guest display and types into it', { skip: browserMissing() }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-vnc-browser-'))
    const browser = await launchBrowser()
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      const page = await context.newPage()
      page.setDefaultTimeout(20_000)
      await logIn(page, cloud.server)
      await menu(page, 'Servers')
      await page.getByRole('link', { name: 'console-vm' }).click()
      await page.getByRole('tab', { name: 'Console' }).click()
      const [viewer] = await Promise.all([context.waitForEvent('page'), page.getByRole('button', { name: 'Open VNC console in a new tab' }).click()])
      const errors: string[] = []
      viewer.on('pageerror', (e) => errors.push(e.message))
      await viewer.waitForURL(/\/console\/vnc\.html\?path=/)
      const status = viewer.locator('#status')
      await until('noVNC connected to the display', 30_000, async () => ((await status.innerText()) === 'Connected' ? true : undefined), 250)
      assert.match(await viewer.title(), /console-vm|QEMU/, "the display's name (QEMU's, from the RFB handshake) is the tab's title")

      // The guest's VGA text console is drawn: more than one colour on the canvas (text on a background).
      const before = await until('text drawn on the canvas', 30_000, async () => {
        const c = await canvasPixels(viewer)
        return c.colours > 1 ? c : undefined
      }, 500)
      assert.ok(before.width >= 640 && before.height >= 400, `a VGA-sized display, got ${before.width}x${before.height}`)

      // Type into the display: the shell on tty1 runs it and writes to the serial port, so the console log shows it.
      await viewer.locator('#screen canvas').click()
      await typeKeys(viewer, 'echo pcc-vnc-$((6*7)) typed >/dev/ttyS0\n')
      await until('what was typed into the display, run by the guest, in its console log', 60_000, async () => {
        const log = await cloud.api.action(serverId, 'os-getConsoleOutput', {})
        return /pcc-vnc-42 typed/.test(log.body?.output ?? '') ? true : undefined
      }, 1000)
      const after = await until('the canvas to show what was typed', 20_000, async () => {
        const c = await canvasPixels(viewer)
        return c.digest !== before.digest ? c : undefined
      }, 250)
      assert.ok(after.colours > 1)
      await shot(viewer, screenshotDir(dir), 'vnc-console')
      assert.deepEqual(errors, [])
      await context.close()
    } finally {
      await browser.close()
      rmSync(dir, { recursive: true, force: true })
    }
    await until('the proxy let go', 10_000, async () => (cloud.server.deps.consoles.sessions.openSockets === 0 ? true : undefined))
  })

  it("the Metrics tab draws the guest's CPU loop near one vCPU within 30 s, and its disk writer", { skip: browserMissing() }, async () => {
    const shown = await openstackJson<{ type: string; url: string }>(['console', 'url', 'show', '--serial', 'console-vm'], adminEnv(cloud.server))
    const client = await openConsoleClient(shown.url, { protocols: ['binary'] })
    // What one busy thread gets of this machine meanwhile: the measure of "one vCPU" on a machine other work shares.
    const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
    const browser = await launchBrowser()
    try {
      const load = 'while :; do :; done & while :; do dd if=/dev/zero of=/mnt/disk/files/load bs=64k count=32 2>/dev/null; sync; sleep 1; done &'
      // Started late in a 10 s step of the clock (the history's slots), so the next step's point is the first whose
      // every sample time lies 10 s or more into the load: wholly inside it.
      await new Promise((resolve) => setTimeout(resolve, (17_500 - (Date.now() % SAMPLE_INTERVAL_MS)) % SAMPLE_INTERVAL_MS))
      client.send(`${load} echo pcc-load-$((6*7)) started\r`)
      await client.until(/pcc-load-42 started/, 60_000)
      const started = { at: Date.now(), spinnerNs: processStats(spinner.pid!)!.cpuNs }
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
      page.setDefaultTimeout(20_000)
      await logIn(page, cloud.server)
      await page.goto(`${cloud.server.url}/#/servers/${serverId}?tab=metrics`)
      const latest = async (title: string, series: string) => {
        const drawn = (await page.evaluate(drawnChartScript(title))) as DrawnChart | null
        return drawn ? drawnValues(drawn, series).at(-1) : undefined
      }
      /** The newest point of the API's hour whose whole 10 s lies inside the load, once the page draws it. */
      const drawnLoadPoint = (title: string, series: string, field: string) =>
        until(`the ${title} chart to draw a point of the load`, 30_000, async () => {
          const points = (await cloud.api.call('GET', `/servers/${serverId}/metrics?range=hour`)).body.metrics.points as Record<string, number | string | null>[]
          const last = points.at(-1)
          if (!last || typeof last[field] !== 'number' || Date.parse(`${String(last.time).replace(/Z$/i, '')}Z`) < started.at + SAMPLE_INTERVAL_MS) return undefined
          const drawn = await latest(title, series)
          return drawn !== undefined && Math.abs(drawn - last[field]) <= Math.max(0.01, last[field] * 0.01) ? drawn : undefined
        }, 1000)
      // The host samples every 10 s and a rate needs two samples: the first point wholly inside the loop is there
      // within 20 s; the page draws it at its next refresh (5 s).
      const busy = await drawnLoadPoint('CPU', 'busy', 'cpu_vcpus')
      console.log(`the CPU point of the load drawn ${((Date.now() - started.at) / 1000).toFixed(1)} s after the loop started`)
      const oneThread = (processStats(spinner.pid!)!.cpuNs - started.spinnerNs) / 1e6 / (Date.now() - started.at)
      console.log(`guest CPU drawn ${busy.toFixed(2)} vCPUs; one busy thread got ${oneThread.toFixed(2)} of a core meanwhile`)
      assert.ok(busy >= 0.75 * oneThread, `the looping guest drew ${busy.toFixed(2)} vCPUs, one busy thread got ${oneThread.toFixed(2)} of a core`)
      const written = await drawnLoadPoint('Disk', 'write', 'disk_write_bytes_per_second')
      assert.ok(written > 64 * 1024, `disk writes ${written} B/s`)
    } finally {
      spinner.kill('SIGKILL')
      client.send('kill %1 %2\r')
      await client.close()
      await browser.close()
    }
  })
})

/**
 * Types as a person on a US keyboard does: Shift held for capitals and the shifted characters. QEMU takes noVNC's key events as
 * scancodes (its extended key events), so '$' sent without Shift would reach the guest as '4'.
 */
const SHIFTED: Record<string, string> = { $: 'Digit4', '(': 'Digit9', ')': 'Digit0', '*': 'Digit8', '>': 'Period' }
async function typeKeys(page: Page, text: string): Promise<void> {
  for (const ch of text) {
    const shifted = SHIFTED[ch] ?? (/[A-Z]/.test(ch) ? `Key${ch}` : undefined)
    if (shifted) {
      await page.keyboard.down('Shift')
      await page.keyboard.press(shifted)
      await page.keyboard.up('Shift')
    } else await page.keyboard.press(ch === '\n' ? 'Enter' : ch)
    await page.waitForTimeout(20)
  }
}

/** The noVNC canvas: its size, how many distinct colours it holds, and a digest of its pixels (in-page code as a string: the tests compile without the DOM's types). */
async function canvasPixels(page: Page): Promise<{ width: number; height: number; colours: number; digest: string }> {
  return (await page.evaluate(`(() => {
    const canvas = document.querySelector('#screen canvas')
    if (!canvas || canvas.width === 0) return { width: 0, height: 0, colours: 0, digest: '' }
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data
    const colours = new Set()
    let h1 = 0x811c9dc5, h2 = 0
    for (let i = 0; i < data.length; i += 4) {
      const rgb = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2]
      if (colours.size < 64) colours.add(rgb)
      h1 = Math.imul(h1 ^ rgb, 16777619) >>> 0
      h2 = (h2 + rgb * (i + 1)) % 4294967291
    }
    return { width: canvas.width, height: canvas.height, colours: colours.size, digest: h1 + ':' + h2 }
  })()`)) as { width: number; height: number; colours: number; digest: string }
}
