import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { browserMissing, launchBrowser } from '../../src/testkit/browser.js'

test('the test browser renders a page served on loopback and runs its script', { skip: browserMissing() }, async () => {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html')
    res.end('<title>t</title><p id=p>static</p><script>document.getElementById("p").textContent = "scripted " + (1 + 1)</script>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const browser = await launchBrowser()
  try {
    const page = await (await browser.newContext()).newPage()
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    assert.equal(await page.textContent('#p'), 'scripted 2')
  } finally {
    await browser.close()
    server.close()
  }
})
