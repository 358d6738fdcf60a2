/**
 * The console's address is anyone's to write (a link in a mail, a chat): an id taken from it (`#/servers/<id>`)
 * stays one path segment of the API request made with the user's token, so a crafted link cannot send that token
 * to another API path of the cloud (client-side path traversal). Debian's Chromium against a real pcc server.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { logIn } from './helpers.js'

describe('ids from the console address', { skip: browserMissing(), timeout: 120_000 }, () => {
  let server: TestServer
  let browser: TestBrowser
  let page: Page

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '0' } })
    browser = await launchBrowser()
    page = await (await browser.newContext()).newPage()
    page.setDefaultTimeout(20_000)
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  it('keep a server id inside the servers path however it is written', async () => {
    await logIn(page, server)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    const paths: string[] = []
    page.on('request', (request) => paths.push(new URL(request.url()).pathname))
    // Decoded, the id climbs to the image API's schema, which the console never asks for by itself.
    const id = encodeURIComponent('../../../image/v2/schemas/image')
    await page.goto(`${server.url}/#/servers/${id}`)
    const alert = page.getByRole('alert')
    await alert.waitFor()
    assert.match(await alert.innerText(), /Could not load the server/)
    assert.ok(paths.includes(`/compute/v2.1/servers/${id}`), paths.join('\n'))
    assert.deepEqual(paths.filter((path) => path.startsWith('/image/')), [], 'nothing reached the image API')
  })
})
