/**
 * The web console in Firefox (Debian's firefox-esr, over WebDriver BiDi): the parts that lean on browser APIs —
 * ES modules, the native <dialog>, fetch, XMLHttpRequest upload progress, WebSocket and xterm.js — work there as in
 * Chromium: log in, see the quota charts, create a server in the dialog and watch it become ACTIVE without a
 * reload, type into its serial console, see its metrics charts drawn (SVG) from the API's points, and upload an
 * image with the progress bar.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { firefoxMissing, launchFirefox } from '../../src/testkit/browser.js'
import { until } from '../../src/testkit/compute-api.js'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminApi, drawnChartScript, drawnMatches, type Api, type DrawnChart } from './helpers.js'

describe('web console in Firefox', { skip: firefoxMissing(), timeout: 300_000 }, () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  let api: Api
  let dir: string

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '200' } })
    api = await adminApi(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-firefox-test-'))
    browser = await launchFirefox()
    page = await browser.newPage()
    await page.setViewport({ width: 1280, height: 800 })
    page.setDefaultTimeout(20_000)
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  /** The text of the first element matching `selector`, once `test` accepts it. */
  const textOf = (selector: string, test: RegExp, timeoutMs = 30_000) =>
    until(`${selector} to show ${test}`, timeoutMs, async () => {
      const text = await page.$eval(selector, (el) => (el as { textContent: string | null }).textContent ?? '').catch(() => '')
      return test.test(text) ? text : undefined
    })

  it('logs in and draws the quota charts', async () => {
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(String(e)))
    await page.goto(`${server.url}/`)
    await page.locator('#f-username').fill('admin')
    await page.locator('#f-password').fill(ADMIN_PASSWORD)
    await page.locator('button[type=submit]').click()
    await page.waitForSelector('figure.donut')
    assert.equal((await page.$$('figure.donut')).length, 12)
    assert.deepEqual(errors, [])
  })

  it('creates a server in the dialog and shows it ACTIVE without reloading', async () => {
    await page.goto(`${server.url}/#/servers`)
    await page.evaluate('window.sameDocument = true')
    await page.locator('::-p-text(Create server)').click()
    await page.waitForSelector('dialog[open] #f-name')
    await page.locator('dialog[open] #f-name').fill('fx-1')
    await page.locator('dialog[open] button[type=submit]').click()
    await textOf('main table tbody', /fx-1\s*ACTIVE/, 60_000)
    assert.equal(await page.evaluate('window.sameDocument'), true)
    assert.equal((await api('GET', '/compute/v2.1/servers/detail?name=fx-1')).body.servers[0].status, 'ACTIVE')
  })

  it('types into the serial console and reads the answer', async () => {
    const id = (await api('GET', '/compute/v2.1/servers/detail?name=fx-1')).body.servers[0].id as string
    await page.goto(`${server.url}/#/servers/${id}?tab=console`)
    await textOf('.xterm-rows', /fx-1 login:/)
    await page.locator('.terminal').click()
    await page.keyboard.type('root\r')
    await textOf('.xterm-rows', /root@fx-1/)
    await page.keyboard.type('hostname\r')
    await textOf('.xterm-rows', /hostname\s*fx-1/)
  })

  it("draws the server's CPU and disk charts from the metrics API", async () => {
    const id = (await api('GET', '/compute/v2.1/servers/detail?name=fx-1')).body.servers[0].id as string
    await page.goto(`${server.url}/#/servers/${id}?tab=metrics`)
    await page.waitForSelector('figure.chart svg')
    // The host samples every 10 s and a rate needs two samples: wait until the page and the API agree on them.
    for (const [title, series, field] of [['CPU', 'busy', 'cpu_vcpus'], ['Disk', 'write', 'disk_write_bytes_per_second']]) {
      await until(`the ${title} chart to draw the API's ${field}`, 60_000, async () => {
        const points = (await api('GET', `/compute/v2.1/servers/${id}/metrics`)).body.metrics.points as Record<string, number | null>[]
        const drawn = (await page.evaluate(drawnChartScript(title))) as DrawnChart | null
        return drawn && drawnMatches(drawn, series, points.map((p) => p[field])) ? true : undefined
      }, 1000)
    }
  })

  it('uploads an image with the progress bar', async () => {
    const file = join(dir, 'fx.raw')
    writeFileSync(file, randomBytes(48 * 1024 * 1024))
    await page.goto(`${server.url}/#/images`)
    await page.locator('::-p-text(Upload image)').click()
    const input = await page.waitForSelector('dialog[open] #f-file')
    await (input as unknown as { uploadFile(path: string): Promise<void> }).uploadFile(file)
    await page.locator('dialog[open] #f-name').fill('fx-image')
    await page.evaluate(`{
      const seen = (window.progressSeen = [])
      new MutationObserver(() => { const bar = document.querySelector('progress'); if (bar) seen.push(bar.value / bar.max) })
        .observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['value'] })
    }`)
    await page.locator('dialog[open] button[type=submit]').click()
    await textOf('main table tbody', /fx-image\s*active/, 120_000)
    const seen = (await page.evaluate('window.progressSeen')) as number[]
    assert.ok(seen.some((v) => v > 0), `the bar moved: ${seen.join(' ')}`)
    assert.equal((await api('GET', '/image/v2/images?name=fx-image')).body.images[0].size, 48 * 1024 * 1024)
  })
})
