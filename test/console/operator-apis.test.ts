/**
 * The operator APIs of issue 28 where an operator looks for them in the web console, in Debian's Chromium against
 * a real pcc server with two simulated hypervisors: host aggregates and availability zones on the Hypervisors
 * page, a server's migrations on its page, the network agents on the Hosts page, QoS specs (and encryption, when
 * the API has it) on Volume types. Each view shows data made through the API beforehand; each admin action is
 * checked through the API afterwards; a project member sees none of it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { adminApi, logIn, menu, screenshotDir, shot, unlabelledControls, type Api } from './helpers.js'

const MEMBER_PASSWORD = 'operator-apis-member'

describe('operator APIs in the web console', { skip: browserMissing(), timeout: 600_000 }, () => {
  let server: TestServer
  let browser: TestBrowser
  let page: Page
  let api: Api
  let dir: string
  let shots: string

  /** The row of a table holding `text` (the first of them). */
  const row = (text: string | RegExp, within: Page | Locator = page) => within.getByRole('row').filter({ hasText: text }).first()
  /** Opens a row's form action, fills it with `fill` and submits it. */
  const rowForm = async (r: Locator, label: string, fill: (dialog: Locator) => Promise<unknown>) => {
    await r.getByRole('button', { name: `${label}…` }).click()
    const dialog = page.getByRole('dialog', { name: label })
    await fill(dialog)
    assert.deepEqual(await unlabelledControls(page), [], label)
    await dialog.getByRole('button', { name: label, exact: true }).click()
    await dialog.waitFor({ state: 'detached' })
  }
  const aggregateNamed = async (name: string) => ((await api('GET', '/compute/v2.1/os-aggregates')).body.aggregates as { id: number; name: string; hosts: string[]; metadata: Record<string, string>; availability_zone: string | null }[]).find((a) => a.name === name)
  const zoneOfHost = async (host: string) => {
    const zones = (await api('GET', '/compute/v2.1/os-availability-zone/detail')).body.availabilityZoneInfo as { zoneName: string; hosts: Record<string, unknown> | null }[]
    return zones.find((z) => Object.keys(z.hosts ?? {}).includes(host))?.zoneName
  }

  before(async () => {
    // Moves take a few seconds each (3 steps of the simulated delay), so a live migration is seen while it runs.
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '2000' } })
    api = await adminApi(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-operator-console-'))
    shots = screenshotDir(dir)
    browser = await launchBrowser()
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    page = await context.newPage()
    page.setDefaultTimeout(20_000)
    page.on('dialog', (d) => void d.accept())
    await logIn(page, server)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('shows aggregates, zones and each hypervisor’s zone; creates, zones, fills, empties and deletes an aggregate', async () => {
    const made = (await api('POST', '/compute/v2.1/os-aggregates', { aggregate: { name: 'rack-a', availability_zone: 'zone-a' } })).body.aggregate
    assert.equal((await api('POST', `/compute/v2.1/os-aggregates/${made.id}/action`, { add_host: { host: 'sim-host-1' } })).status, 200)
    assert.equal((await api('POST', `/compute/v2.1/os-aggregates/${made.id}/action`, { set_metadata: { metadata: { ssd: 'true' } } })).status, 200)
    await menu(page, 'Hypervisors')
    const hypervisor = (name: string) => page.locator('section.usage').filter({ has: page.getByRole('heading', { name }) })
    await hypervisor('sim-host-1').getByText(/· zone zone-a ·/).waitFor()
    await hypervisor('sim-host-2').getByText(/· zone nova ·/).waitFor()
    const rackA = row('rack-a')
    for (const text of ['zone-a', 'sim-host-1', 'ssd=true']) await rackA.getByRole('cell', { name: text, exact: true }).waitFor()
    await row(/^zone-a/).getByRole('cell', { name: 'sim-host-1', exact: true }).waitFor()
    assert.deepEqual(await unlabelledControls(page), [])

    // Create with a zone, add the other host: the hypervisor's zone follows.
    await page.getByRole('button', { name: 'Create aggregate' }).click()
    const create = page.getByRole('dialog', { name: 'Create aggregate' })
    await create.getByLabel('Name').fill('rack-b')
    await create.getByLabel('Availability zone').fill('zone-b')
    await create.getByRole('button', { name: 'Create aggregate' }).click()
    const rackB = row('rack-b')
    await rackB.getByRole('cell', { name: 'zone-b', exact: true }).waitFor()
    assert.equal((await aggregateNamed('rack-b'))?.availability_zone, 'zone-b')
    await rowForm(rackB, 'Add host', (d) => d.getByLabel('Host').selectOption('sim-host-2'))
    await rackB.getByRole('cell', { name: 'sim-host-2', exact: true }).waitFor()
    assert.deepEqual((await aggregateNamed('rack-b'))?.hosts, ['sim-host-2'])
    assert.equal(await zoneOfHost('sim-host-2'), 'zone-b')
    await hypervisor('sim-host-2').getByText(/· zone zone-b ·/).waitFor()

    await rowForm(rackB, 'Set zone', (d) => d.getByLabel('Availability zone').fill('zone-c'))
    await rackB.getByRole('cell', { name: 'zone-c', exact: true }).waitFor()
    assert.equal((await aggregateNamed('rack-b'))?.availability_zone, 'zone-c')
    assert.equal(await zoneOfHost('sim-host-2'), 'zone-c')
    await hypervisor('sim-host-2').getByText(/· zone zone-c ·/).waitFor()

    await rowForm(rackB, 'Set metadata', async (d) => {
      await d.getByLabel('Key').fill('gpu')
      await d.getByLabel('Value').fill('none')
    })
    await rackB.getByRole('cell', { name: 'gpu=none', exact: true }).waitFor()
    assert.equal((await aggregateNamed('rack-b'))?.metadata.gpu, 'none')
    await page.getByRole('heading', { name: 'Host aggregates' }).scrollIntoViewIfNeeded()
    await shot(page, shots, 'hypervisors-aggregates')

    // An aggregate with hosts cannot go: the API's reason shows; emptied, it goes.
    await rackB.getByRole('button', { name: 'Delete' }).click()
    const refusal = page.getByRole('dialog', { name: 'Delete failed' })
    await refusal.getByRole('alert').getByText(/Host aggregate is not empty/).waitFor()
    await refusal.getByRole('button', { name: 'Close' }).click()
    assert.ok(await aggregateNamed('rack-b'), 'the refused delete changed nothing')
    await rowForm(rackB, 'Remove host', (d) => d.getByLabel('Host').selectOption('sim-host-2'))
    await rackB.getByRole('cell', { name: 'none', exact: true }).first().waitFor()
    assert.deepEqual((await aggregateNamed('rack-b'))?.hosts, [])
    assert.equal(await zoneOfHost('sim-host-2'), 'nova')
    await hypervisor('sim-host-2').getByText(/· zone nova ·/).waitFor()
    await rackB.getByRole('button', { name: 'Delete' }).click()
    await rackB.waitFor({ state: 'detached' })
    assert.equal(await aggregateNamed('rack-b'), undefined)
    // The next tests move servers between both hosts: one zone again.
    assert.equal((await api('POST', `/compute/v2.1/os-aggregates/${made.id}/action`, { remove_host: { host: 'sim-host-1' } })).status, 200)
    assert.equal((await api('DELETE', `/compute/v2.1/os-aggregates/${made.id}`)).status, 200)
  })

  it('shows a server’s live migration while it runs, then in its migration history', async () => {
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    const created = await api('POST', '/compute/v2.1/servers', { server: { name: 'mover', imageRef: image, flavorRef: '1', networks: 'none' } })
    assert.equal(created.status, 202)
    const id = created.body.server.id as string
    const show = async () => (await api('GET', `/compute/v2.1/servers/${id}`)).body.server
    const source = await until('the server ACTIVE', 90_000, async () => {
      const s = await show()
      return s.status === 'ACTIVE' ? (s['OS-EXT-SRV-ATTR:host'] as string) : undefined
    })
    await page.goto(`${server.url}/#/servers/${id}?tab=migrations`)
    await page.getByRole('heading', { name: 'mover' }).waitFor()
    await page.getByText('None: the server is not being live migrated.').waitFor()
    await page.getByText('This server was never moved.').waitFor()

    assert.equal((await api('POST', `/compute/v2.1/servers/${id}/action`, { 'os-migrateLive': { host: null, block_migration: 'auto' } })).status, 202)
    // An operator opening the page while it runs (an open page notices within its 10 s refresh).
    await page.reload()
    const running = page.getByRole('table').first()
    await running.getByRole('cell', { name: new RegExp(`^${source} → `) }).waitFor({ timeout: 30_000 })
    const seen = (await api('GET', `/compute/v2.1/servers/${id}/migrations`)).body.migrations as { id: number }[]
    await page.evaluate('window.scrollTo(0, 0)')
    await shot(page, shots, 'server-migrations')
    await until('the live migration done', 90_000, async () => ((await show()).status === 'ACTIVE' && !(await show())['OS-EXT-STS:task_state'] ? true : undefined))
    const history = (await api('GET', `/compute/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations as { id: number; status: string; source_compute: string; dest_compute: string; migration_type: string }[]
    assert.equal(history.length, 1)
    const done = history[0]
    assert.equal(done.status, 'completed')
    assert.notEqual(done.dest_compute, source)
    if (seen.length > 0) assert.equal(seen[0].id, done.id, 'the running row was this migration')
    await page.getByText('None: the server is not being live migrated.').waitFor({ timeout: 30_000 })
    const line = row(`${source} → ${done.dest_compute}`, page.getByRole('table').nth(1))
    await line.getByRole('cell', { name: 'live-migration', exact: true }).waitFor()
    await line.getByRole('cell', { name: 'completed', exact: true }).waitFor()
    await line.getByRole('cell', { name: String(done.id), exact: true }).waitFor()
    assert.equal((await api('DELETE', `/compute/v2.1/servers/${id}`)).status, 204)
  })

  it('aborts a running live migration from its row (after a confirmation): the server stays on its source', async () => {
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    const created = await api('POST', '/compute/v2.1/servers', { server: { name: 'stayer', imageRef: image, flavorRef: '1', networks: 'none' } })
    const id = created.body.server.id as string
    const show = async () => (await api('GET', `/compute/v2.1/servers/${id}`)).body.server
    const source = await until('the server ACTIVE', 90_000, async () => {
      const s = await show()
      return s.status === 'ACTIVE' ? (s['OS-EXT-SRV-ATTR:host'] as string) : undefined
    })
    // The copy lasts until it is aborted.
    for (const h of server.deps.conductor.simulatedHosts) h.driver.liveMigrationMs = 120_000
    try {
      assert.equal((await api('POST', `/compute/v2.1/servers/${id}/action`, { 'os-migrateLive': { host: null, block_migration: 'auto' } })).status, 202)
      await until('the migration running', 60_000, async () => ((await api('GET', `/compute/v2.1/servers/${id}/migrations`)).body.migrations as { status: string }[]).find((m) => m.status === 'running'))
      await page.goto(`${server.url}/#/servers/${id}?tab=migrations`)
      const running = row('running', page.getByRole('table').first())
      await running.getByRole('button', { name: 'Force complete' }).waitFor({ timeout: 30_000 })
      await running.getByRole('button', { name: 'Abort' }).click()
      await until('the server idle', 60_000, async () => ((await show())['OS-EXT-STS:task_state'] === null ? true : undefined))
      const s = await show()
      assert.equal(s.status, 'ACTIVE')
      assert.equal(s['OS-EXT-SRV-ATTR:host'], source)
      const history = (await api('GET', `/compute/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations as { status: string }[]
      assert.deepEqual(history.map((m) => m.status), ['cancelled'])
      await page.getByText('None: the server is not being live migrated.').waitFor({ timeout: 30_000 })
    } finally {
      for (const h of server.deps.conductor.simulatedHosts) h.driver.liveMigrationMs = undefined
    }
    assert.equal((await api('DELETE', `/compute/v2.1/servers/${id}`)).status, 204)
  })

  it('shows each host’s network agents, and disables and enables one', async () => {
    type Agent = { id: string; host: string; agent_type: string; alive: boolean; admin_state_up: boolean }
    const agents = async () => (await api('GET', '/network/v2.0/agents')).body.agents as Agent[]
    const dhcp2 = (await agents()).find((a) => a.host === 'sim-host-2' && a.agent_type === 'DHCP agent')!
    assert.ok(dhcp2, 'sim-host-2 runs a DHCP agent')
    assert.equal((await api('PUT', `/network/v2.0/agents/${dhcp2.id}`, { agent: { admin_state_up: false } })).status, 200)
    await menu(page, 'Hosts')
    const table = page.getByRole('heading', { name: 'Network agents' }).locator('xpath=../..').getByRole('table')
    const agentRow = (host: string, type: string) => table.locator('tr').filter({ hasText: host }).filter({ hasText: type })
    for (const a of await agents()) {
      const r = agentRow(a.host, a.agent_type)
      await r.getByText(a.alive ? 'UP' : 'DOWN', { exact: true }).waitFor()
      await r.getByText(a.admin_state_up ? 'enabled' : 'disabled', { exact: true }).waitFor()
    }
    assert.equal(await table.locator('tbody tr').count(), (await agents()).length)
    await page.getByRole('heading', { name: 'Network agents' }).scrollIntoViewIfNeeded()
    await shot(page, shots, 'hosts-agents')

    await agentRow('sim-host-2', 'DHCP agent').getByRole('button', { name: 'Enable' }).click()
    await agentRow('sim-host-2', 'DHCP agent').getByText('enabled', { exact: true }).waitFor()
    assert.equal((await agents()).find((a) => a.id === dhcp2.id)?.admin_state_up, true)
    await agentRow('sim-host-1', 'Metadata agent').getByRole('button', { name: 'Disable' }).click()
    await agentRow('sim-host-1', 'Metadata agent').getByText('disabled', { exact: true }).waitFor()
    assert.equal((await agents()).find((a) => a.host === 'sim-host-1' && a.agent_type === 'Metadata agent')?.admin_state_up, false)
    assert.deepEqual(await unlabelledControls(page), [])
  })

  it('shows each volume type’s QoS specs; creates, associates and disassociates them', async () => {
    const fast = (await api('POST', '/volume/v3/types', { volume_type: { name: 'fast' } })).body.volume_type
    const slow = (await api('POST', '/volume/v3/types', { volume_type: { name: 'slow' } })).body.volume_type
    const gold = (await api('POST', '/volume/v3/qos-specs', { qos_specs: { name: 'gold', consumer: 'front-end', total_iops_sec: '500' } })).body.qos_specs
    assert.equal((await api('GET', `/volume/v3/qos-specs/${gold.id}/associate?vol_type_id=${fast.id}`)).status, 202)
    const qosOf = async (typeId: string) => (await api('GET', `/volume/v3/types/${typeId}`)).body.volume_type.qos_specs_id as string | null
    await menu(page, 'Volume types')
    await page.getByRole('heading', { name: 'Volume types', exact: true }).waitFor()
    const types = page.getByRole('table').first()
    const specs = page.getByRole('table').nth(1)
    await row('fast', types).getByRole('cell', { name: /^gold \(front-end\)\s*total_iops_sec=500$/ }).waitFor()
    await row('slow', types).getByRole('cell', { name: 'none', exact: true }).first().waitFor()
    await row('gold', specs).getByRole('cell', { name: 'fast', exact: true }).waitFor()

    // Encryption shows only when the block storage API answers for it, and then as it answers.
    const encryption = await api('GET', `/volume/v3/types/${fast.id}/encryption`)
    const header = types.getByRole('columnheader', { name: 'Encryption' })
    if (encryption.status === 200) {
      await header.waitFor()
      await row('fast', types).getByRole('cell', { name: encryption.body.provider ? new RegExp(encryption.body.provider) : 'none' }).first().waitFor()
    } else {
      assert.equal(await header.count(), 0, 'no Encryption column without the API')
    }

    await page.getByRole('button', { name: 'Create QoS specs' }).click()
    const create = page.getByRole('dialog', { name: 'Create QoS specs' })
    await create.getByLabel('Name').fill('silver')
    await create.getByLabel('Consumer').selectOption('back-end')
    await create.getByLabel('Specs').fill('read_iops_sec=100\nwrite_iops_sec = 50\n')
    assert.deepEqual(await unlabelledControls(page), [])
    await create.getByRole('button', { name: 'Create QoS specs' }).click()
    await row('silver', specs).getByRole('cell', { name: 'read_iops_sec=100, write_iops_sec=50', exact: true }).waitFor()
    const silver = ((await api('GET', '/volume/v3/qos-specs')).body.qos_specs as { id: string; name: string; consumer: string; specs: Record<string, string> }[]).find((q) => q.name === 'silver')!
    assert.equal(silver.consumer, 'back-end')
    assert.deepEqual(silver.specs, { read_iops_sec: '100', write_iops_sec: '50' })

    // A line that is no key=value is refused in the form, and nothing is made.
    await page.getByRole('button', { name: 'Create QoS specs' }).click()
    await create.getByLabel('Name').fill('broken')
    await create.getByLabel('Specs').fill('read_iops_sec')
    await create.getByRole('button', { name: 'Create QoS specs' }).click()
    await create.getByRole('alert').getByText(/Line 1 \("read_iops_sec"\) is not key=value/).waitFor()
    await create.getByRole('button', { name: 'Cancel' }).click()
    assert.ok(!((await api('GET', '/volume/v3/qos-specs')).body.qos_specs as { name: string }[]).some((q) => q.name === 'broken'))

    await rowForm(row('slow', types), 'Associate QoS', (d) => d.getByLabel('QoS specs').selectOption({ label: 'silver (back-end)' }))
    await row('slow', types).getByRole('cell', { name: /^silver \(back-end\)\s*read_iops_sec=100, write_iops_sec=50$/ }).waitFor()
    assert.equal(await qosOf(slow.id), silver.id)
    await row('silver', page.getByRole('table').nth(1)).getByRole('cell', { name: 'slow', exact: true }).waitFor()

    await row('fast', types).getByRole('button', { name: 'Disassociate QoS' }).click()
    await row('fast', types).getByRole('cell', { name: 'none', exact: true }).first().waitFor()
    assert.equal(await qosOf(fast.id), null)
    await row('gold', page.getByRole('table').nth(1)).getByRole('cell', { name: 'none', exact: true }).waitFor()
    await page.evaluate('window.scrollTo(0, 0)')
    await shot(page, shots, 'volume-types')

    // A private type made in the page is private behind it; QoS specs no type uses go.
    await page.getByRole('button', { name: 'Create volume type' }).click()
    const typeDialog = page.getByRole('dialog', { name: 'Create volume type' })
    await typeDialog.getByLabel('Name').fill('archive')
    await typeDialog.getByLabel('Public (every project may use it)').uncheck()
    await typeDialog.getByRole('button', { name: 'Create volume type' }).click()
    await row('archive', types).getByRole('cell', { name: 'no', exact: true }).waitFor()
    const archive = ((await api('GET', '/volume/v3/types')).body.volume_types as { name: string; is_public: boolean }[]).find((t) => t.name === 'archive')
    assert.equal(archive?.is_public, false)
    await row('gold', page.getByRole('table').nth(1)).getByRole('button', { name: 'Delete' }).click()
    await row('gold', page.getByRole('table').nth(1)).waitFor({ state: 'detached' })
    assert.equal((await api('GET', `/volume/v3/qos-specs/${gold.id}`)).status, 404)
  })

  it('shows a project member none of it: no admin pages, no migrations tab', async () => {
    const project = (await api('GET', '/identity/v3/projects?name=admin')).body.projects[0]
    const member = (await api('GET', '/identity/v3/roles?name=member')).body.roles[0]
    const user = (await api('POST', '/identity/v3/users', { user: { name: 'operator-apis-member', password: MEMBER_PASSWORD, default_project_id: project.id } })).body.user
    assert.equal((await api('PUT', `/identity/v3/projects/${project.id}/users/${user.id}/roles/${member.id}`)).status, 204)
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    const id = (await api('POST', '/compute/v2.1/servers', { server: { name: 'members-view', imageRef: image, flavorRef: '1', networks: 'none' } })).body.server.id as string
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    try {
      const memberPage = await other.newPage()
      memberPage.setDefaultTimeout(20_000)
      const asked: string[] = []
      memberPage.on('request', (r) => asked.push(r.url()))
      await logIn(memberPage, server, 'operator-apis-member', MEMBER_PASSWORD)
      await memberPage.getByRole('heading', { name: 'Overview' }).waitFor()
      const nav = memberPage.getByRole('navigation', { name: 'Main' })
      for (const name of ['Hypervisors', 'Hosts', 'Volume types']) assert.equal(await nav.getByRole('link', { name, exact: true }).count(), 0, name)
      for (const path of ['/admin/hypervisors', '/admin/hosts', '/admin/volume-types']) {
        await memberPage.goto(`${server.url}/#${path}`)
        await memberPage.getByText('This page needs the admin role').waitFor()
      }
      // Even asked for by address, the server page shows no migrations tab and does not ask for them.
      await memberPage.goto(`${server.url}/#/servers/${id}?tab=migrations`)
      await memberPage.getByRole('heading', { name: 'members-view' }).waitFor()
      await memberPage.getByRole('tab', { name: 'Overview' }).waitFor()
      assert.equal(await memberPage.getByRole('tab', { name: 'Migrations' }).count(), 0)
      assert.equal(await memberPage.getByRole('tab', { name: 'Overview' }).getAttribute('aria-selected'), 'true')
      await memberPage.getByRole('heading', { name: 'Addresses' }).waitFor()
      assert.ok(!asked.some((url) => /migrations|os-aggregates|\/agents|qos-specs/.test(url)), asked.filter((url) => /migrations|os-aggregates|\/agents|qos-specs/.test(url)).join(' '))
    } finally {
      await other.close()
    }
    assert.equal((await api('DELETE', `/compute/v2.1/servers/${id}`)).status, 204)
  })
})
