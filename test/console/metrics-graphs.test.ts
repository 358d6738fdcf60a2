/**
 * The metrics graphs of the web console in Debian's Chromium (docs/console.md, docs/metrics.md): a project member
 * sees its server's CPU, memory, disk and network charts, drawn from the simulated driver's samples as the metrics
 * API answered them (the test turns each drawn line back into values and compares them with the API's points) and
 * switches the range; a member of another project gets the not-found page for that server and no charts; an
 * administrator sees a host's charts with its allocation against the overcommit limit, and the cloud's overview
 * with the busiest servers.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page, Response } from 'playwright-core'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { apiCall, login, until } from '../../src/testkit/compute-api.js'
import { LOAD } from '../../src/host/compute/simulated/simulated-metrics.js'
import { adminApi, drawnChartScript, drawnMatches, logIn, screenshotDir, shot, type Api, type DrawnChart } from './helpers.js'

const PASSWORD = 'graphs-user-secret'

describe('metrics graphs in the web console', { skip: browserMissing(), timeout: 300_000 }, () => {
  let server: TestServer
  let browser: TestBrowser
  let context: BrowserContext
  let page: Page
  let api: Api
  let shots: string
  let dir: string
  let serverId: string
  let hostId: string
  let ann: { token: string; projectId: string }
  /** The metrics answers the page received, newest last. */
  const answers: { url: string; body: { metrics: { points: Record<string, number | null>[] } } }[] = []

  const memberOf = async (projectName: string, user: string) => {
    const project = (await api('POST', '/identity/v3/projects', { project: { name: projectName, description: '' } })).body.project
    const member = (await api('GET', '/identity/v3/roles?name=member')).body.roles[0]
    const created = (await api('POST', '/identity/v3/users', { user: { name: user, password: PASSWORD, default_project_id: project.id } })).body.user
    assert.equal((await api('PUT', `/identity/v3/projects/${project.id}/users/${created.id}/roles/${member.id}`)).status, 204)
    return login(server.url, PASSWORD, user, projectName)
  }

  const chart = async (title: string) => (await page.evaluate(drawnChartScript(title))) as DrawnChart | null

  /** Waits until the chart titled `title` draws `series` with the values of the newest answer of `urlPart`. */
  const drawnFromApi = (title: string, series: string, urlPart: string, field: string) =>
    until(`the ${title} chart to draw ${series} as the API answered`, 30_000, async () => {
      const answer = answers.findLast((a) => a.url.includes(urlPart))
      const drawn = await chart(title)
      if (!answer || !drawn) return undefined
      const values = answer.body.metrics.points.map((p) => p[field])
      return drawnMatches(drawn, series, values) ? values.filter((v) => v !== null) : undefined
    })

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '0' } })
    api = await adminApi(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-graphs-test-'))
    shots = screenshotDir(dir)
    ann = await memberOf('graphs-a', 'ann')
    await memberOf('graphs-b', 'ben')
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    const created = await apiCall(`${server.url}/compute/v2.1/servers`, 'POST', { token: ann.token, body: { server: { name: 'busy-one', imageRef: image, flavorRef: '1', networks: 'none' } }, headers: { 'openstack-api-version': 'compute 2.96' } })
    assert.equal(created.status, 202, JSON.stringify(created.body))
    serverId = created.body.server.id
    const active = await until('the server ACTIVE', 60_000, async () => {
      const s = (await api('GET', `/compute/v2.1/servers/${serverId}`)).body.server
      return s.status === 'ACTIVE' ? s : undefined
    })
    hostId = (await api('GET', `/compute/v2.1/os-hypervisors?hypervisor_hostname_pattern=${active['OS-EXT-SRV-ATTR:host']}`)).body.hypervisors[0].id
    // The host samples every 10 s; a rate needs two samples, a line two rates.
    await until('three CPU points of the server', 90_000, async () => {
      const points = (await apiCall(`${server.url}/compute/v2.1/servers/${serverId}/metrics`, 'GET', { token: ann.token })).body.metrics.points as { cpu_vcpus: number | null }[]
      return points.filter((p) => p.cpu_vcpus !== null).length >= 3 ? true : undefined
    }, 1000)
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    page = await context.newPage()
    page.setDefaultTimeout(20_000)
    page.on('response', (res: Response) => {
      if (!/\/metrics\?range=/.test(res.url()) || res.status() !== 200) return
      res.json().then((body) => answers.push({ url: res.url(), body }), () => {})
    })
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("draws a member's server's CPU, memory, disk and network from the metrics API", async () => {
    await logIn(page, server, 'ann', PASSWORD)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.goto(`${server.url}/#/servers/${serverId}?tab=metrics`)
    await page.getByRole('group', { name: 'Time range' }).waitFor()
    const cpu = await drawnFromApi('CPU', 'busy', `/servers/${serverId}/metrics?range=hour`, 'cpu_vcpus')
    assert.ok(cpu.length >= 3, `${cpu.length} CPU points`)
    // The simulated model keeps a quarter of its one vCPU busy: the drawn line says so.
    for (const v of cpu) assert.ok(Math.abs(v - LOAD.cpuShare) < 0.02, `CPU ${v}`)
    const memory = await drawnFromApi('Memory', 'used', `/servers/${serverId}/metrics?range=hour`, 'memory_bytes')
    assert.ok(memory.every((v) => v === 512 * 1024 * 1024 * LOAD.memoryShare), memory.join(' '))
    const read = await drawnFromApi('Disk', 'read', `/servers/${serverId}/metrics?range=hour`, 'disk_read_bytes_per_second')
    assert.ok(read.every((v) => Math.abs(v - LOAD.readBps) < LOAD.readBps * 0.05), read.join(' '))
    await drawnFromApi('Disk', 'write', `/servers/${serverId}/metrics?range=hour`, 'disk_write_bytes_per_second')
    // The axes carry units.
    const svg = page.locator('figure.chart', { hasText: 'Disk' }).locator('svg')
    assert.match(await svg.textContent() ?? '', /KiB\/s/)
    assert.match((await page.locator('figure.chart', { hasText: 'CPU' }).locator('svg').textContent()) ?? '', /vCPUs/)
    assert.match((await svg.getAttribute('aria-label')) ?? '', /^Disk: latest read 64\.0 KiB\/s, write 32\.0 KiB\/s$/)
    await shot(page, shots, 'server-metrics')
  })

  it('switches the range to a day: the page asks the 5-minute history and draws it', async () => {
    await page.getByRole('group', { name: 'Time range' }).getByRole('button', { name: 'Day' }).click()
    await page.waitForURL(/range=day/)
    assert.equal(await page.getByRole('button', { name: 'Day' }).getAttribute('aria-pressed'), 'true')
    const cpu = await drawnFromApi('CPU', 'busy', `/servers/${serverId}/metrics?range=day`, 'cpu_vcpus')
    assert.ok(cpu.length >= 1 && cpu.every((v) => Math.abs(v - LOAD.cpuShare) < 0.02), cpu.join(' '))
  })

  it("shows a member of another project no graphs of that server (404 behind the page)", async () => {
    await page.getByRole('button', { name: 'Log out' }).click()
    await logIn(page, server, 'ben', PASSWORD)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    const before = answers.length
    const refused = page.waitForResponse((res) => res.url().includes(`/servers/${serverId}`))
    await page.goto(`${server.url}/#/servers/${serverId}?tab=metrics`)
    assert.equal((await refused).status(), 404)
    await page.getByRole('alert').filter({ hasText: 'Could not load the server' }).waitFor()
    assert.equal(await page.locator('figure.chart').count(), 0)
    assert.equal(answers.length, before, 'no metrics reached the page')
    // And the API the page would have asked refuses ben too.
    const ben = await login(server.url, PASSWORD, 'ben', 'graphs-b')
    assert.equal((await apiCall(`${server.url}/compute/v2.1/servers/${serverId}/metrics`, 'GET', { token: ben.token })).status, 404)
  })

  it("shows an administrator a host's charts and its allocation against the overcommit limit", async () => {
    await page.getByRole('button', { name: 'Log out' }).click()
    await logIn(page, server, 'admin', ADMIN_PASSWORD)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.goto(`${server.url}/#/admin/hypervisors`)
    await page.getByRole('link', { name: 'sim-host-1' }).click()
    await page.waitForURL(new RegExp(`#/admin/hosts/${hostId}`))
    await page.getByRole('heading', { name: 'Allocation' }).waitFor()
    const rings = await page.locator('figure.donut').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')))
    assert.match(rings[0] ?? '', /^vCPUs: 1 of \d+$/)
    assert.equal(rings.length, 3)
    const guests = await drawnFromApi('Guests', 'guests', `/hosts/${hostId}/metrics?range=hour`, 'guests')
    assert.ok(guests.length >= 3 && guests.at(-1) === 1, guests.join(' '))
    const cpu = await drawnFromApi('CPU', 'busy', `/hosts/${hostId}/metrics?range=hour`, 'cpu_cpus')
    assert.ok(cpu.length >= 2 && cpu.every((v) => v > 0), cpu.join(' '))
    await drawnFromApi('Memory', 'used', `/hosts/${hostId}/metrics?range=hour`, 'memory_bytes')
    await shot(page, shots, 'host-metrics')
  })

  it("shows the cloud's totals and its busiest servers", async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cloud metrics', exact: true }).click()
    const busiest = page.getByRole('table', { name: 'Servers by CPU busy now' })
    await busiest.getByRole('link', { name: 'busy-one' }).waitFor()
    assert.match((await busiest.locator('tbody tr').first().innerText()) ?? '', /busy-one\s+.*0\.25 vCPUs of 1/s)
    assert.match(await page.locator('dl.facts').innerText(), /Guests running\s+1/)
    assert.match((await page.getByRole('table', { name: 'Hosts by CPU busy now' }).innerText()) ?? '', /sim-host-1/)
    // One host: the cloud's sums are that host's values.
    await drawnFromApi('Guests, all hosts', 'guests', `/hosts/${hostId}/metrics?range=hour`, 'guests')
    await drawnFromApi('CPU, all hosts', 'busy', `/hosts/${hostId}/metrics?range=hour`, 'cpu_cpus')
    await shot(page, shots, 'cloud-metrics')
  })
})
