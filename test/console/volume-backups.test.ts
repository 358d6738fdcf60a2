/**
 * Volume backups in the web console, in Debian's Chromium against a real pcc server whose volumes are files: a
 * refused incremental backup shows Cinder's message and its advice and makes nothing; a full backup from the
 * volume's row and an incremental one from the list's button reach `available` with no reload; restored to a new
 * volume and onto an existing one, each holds the bytes of its backup's moment; a backup that an incremental one
 * depends on is not deleted (the refusal shown); deleting both removes their rows. Each step is checked through
 * the API and on the volume files. An attached volume is backed up only with "Back up while attached" (force).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { until } from '../../src/testkit/compute-api.js'
import { adminApi, logIn, menu, screenshotDir, shot, unlabelledControls, type Api } from './helpers.js'

const MIB = 1024 * 1024
const V = '/volume/v3'

interface BackupBody {
  id: string
  name: string
  status: string
  is_incremental: boolean
  volume_id: string
}

describe('volume backups in the web console', { skip: browserMissing(), timeout: 600_000 }, () => {
  let server: TestServer
  let browser: TestBrowser
  let page: Page
  let api: Api
  let dir: string
  let shots: string
  let source: string

  const row = (text: string, within: Page | Locator = page) => within.getByRole('row').filter({ hasText: text }).first()
  const backupsSection = () => page.locator('main section').filter({ has: page.getByRole('heading', { name: 'Volume backups' }) })
  const volumesSection = () => page.locator('main section').filter({ has: page.getByRole('heading', { name: 'Volumes', exact: true }) })
  const backups = async () => (await api('GET', `${V}/backups/detail`)).body.backups as BackupBody[]
  const backupNamed = async (name: string) => (await backups()).find((b) => b.name === name)
  const volumeNamed = async (name: string) => ((await api('GET', `${V}/volumes/detail?name=${name}`)).body.volumes as { id: string; status: string; size: number }[])[0]
  const volumeFile = (id: string) => join(server.dataDir, 'volumes', `volume-${id}`)
  /** Writes one MiB of `text` repeated at the volume file's start (its first chunk). */
  const write = async (id: string, text: string) => {
    const file = await open(volumeFile(id), 'r+')
    await file.write(Buffer.alloc(MIB, text), 0, MIB, 0)
    await file.close()
  }
  const firstMib = async (id: string) => {
    const file = await open(volumeFile(id), 'r')
    const buffer = Buffer.alloc(MIB)
    await file.read(buffer, 0, MIB, 0)
    await file.close()
    return buffer
  }
  const createVolume = async (name: string) => {
    const made = await api('POST', `${V}/volumes`, { volume: { name, size: 1 } })
    assert.equal(made.status, 202, JSON.stringify(made.body))
    await until(`volume ${name} available`, 20_000, async () => ((await volumeNamed(name))?.status === 'available' ? true : undefined))
    return made.body.volume.id as string
  }
  /** Opens a row's (or the list's) form, fills it, checks every control is labelled, and submits it. */
  const submitForm = async (opener: Locator, title: string, fill: (dialog: Locator) => Promise<unknown>) => {
    await opener.click()
    const dialog = page.getByRole('dialog', { name: title })
    await fill(dialog)
    assert.deepEqual(await unlabelledControls(page), [], title)
    await dialog.getByRole('button', { name: title, exact: true }).click()
    return dialog
  }

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1' } })
    api = await adminApi(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-backups-console-'))
    shots = screenshotDir(dir)
    source = await createVolume('db-data')
    await write(source, 'A')
    browser = await launchBrowser()
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    page = await context.newPage()
    page.setDefaultTimeout(20_000)
    page.on('dialog', (d) => void d.accept())
    await logIn(page, server)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await menu(page, 'Volumes')
    await backupsSection().getByText('No backups.').waitFor()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('shows the refusal of an incremental backup without a full one, with what to do, and makes nothing', async () => {
    const dialog = await submitForm(row('db-data', volumesSection()).getByRole('button', { name: 'Back up…' }), 'Back up', async (d) => {
      assert.equal(await d.getByLabel('Back up while attached').count(), 0, 'no force for an available volume')
      await d.getByLabel('Incremental').check()
    })
    const notice = dialog.getByRole('alert')
    await notice.getByText(/incremental/i).waitFor()
    await notice.getByText('Correct the value the message names and submit again.').waitFor()
    await notice.getByText(/Request id: req-/).waitFor()
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    assert.deepEqual(await backups(), [])
  })

  it('backs up a volume from its row: the backup appears and becomes available with no reload', async () => {
    const dialog = await submitForm(row('db-data', volumesSection()).getByRole('button', { name: 'Back up…' }), 'Back up', async (d) => {
      await d.getByLabel('Backup name').fill('db-full')
    })
    await dialog.waitFor({ state: 'detached' })
    const full = row('db-full', backupsSection())
    // The lists poll while a row is busy: the backup is seen creating, then available.
    await full.getByText('creating').waitFor()
    await full.getByText('available').waitFor({ timeout: 60_000 })
    await full.getByRole('cell', { name: 'db-data', exact: true }).waitFor()
    await full.getByRole('cell', { name: 'no', exact: true }).waitFor()
    await row('db-data', volumesSection()).getByText('available').waitFor()
    const made = await backupNamed('db-full')
    assert.equal(made?.status, 'available')
    assert.equal(made?.volume_id, source)
    assert.equal(made?.is_incremental, false)
  })

  it('makes an incremental backup from the list’s button after the volume changed', async () => {
    await write(source, 'B')
    const dialog = await submitForm(backupsSection().getByRole('button', { name: 'Create backup' }), 'Create backup', async (d) => {
      await d.getByLabel('Volume').selectOption({ label: 'db-data (1 GiB, available)' })
      await d.getByLabel('Backup name').fill('db-incr')
      await d.getByLabel('Incremental').check()
    })
    await dialog.waitFor({ state: 'detached' })
    const incr = row('db-incr', backupsSection())
    await incr.getByText('available').waitFor({ timeout: 60_000 })
    await incr.getByRole('cell', { name: 'yes', exact: true }).waitFor()
    assert.equal((await backupNamed('db-incr'))?.is_incremental, true)
    await backupsSection().scrollIntoViewIfNeeded()
    await shot(page, shots, 'volume-backups')
  })

  it('restores the incremental backup to a new volume, which holds its bytes', async () => {
    await write(source, 'C')
    const dialog = await submitForm(row('db-incr', backupsSection()).getByRole('button', { name: 'Restore…' }), 'Restore', async (d) => {
      await d.getByLabel('A new volume').check()
      await d.getByLabel('New volume name').fill('db-restored')
    })
    await dialog.waitFor({ state: 'detached' })
    // The new volume shows in the volumes list while it is restored, and becomes available there with no reload.
    await row('db-restored', volumesSection()).getByText('restoring-backup').waitFor()
    await row('db-restored', volumesSection()).getByText('available').waitFor({ timeout: 60_000 })
    await row('db-incr', backupsSection()).getByText('available').waitFor()
    const restored = await volumeNamed('db-restored')
    assert.equal(restored.status, 'available')
    assert.ok((await firstMib(restored.id)).equals(Buffer.alloc(MIB, 'B')), 'the bytes of the incremental backup')
  })

  it('restores the full backup onto an existing available volume, replacing its bytes', async () => {
    const target = await createVolume('scratch')
    await write(target, 'Z')
    await page.reload()
    await row('scratch', volumesSection()).getByText('available').waitFor()
    const dialog = await submitForm(row('db-full', backupsSection()).getByRole('button', { name: 'Restore…' }), 'Restore', async (d) => {
      await d.getByLabel('An existing volume').check()
      await d.getByRole('combobox', { name: 'Volume', exact: true }).selectOption({ label: 'scratch (1 GiB)' })
    })
    await dialog.waitFor({ state: 'detached' })
    await until('scratch restored', 60_000, async () => ((await volumeNamed('scratch')).status === 'available' && (await firstMib(target)).equals(Buffer.alloc(MIB, 'A')) ? true : undefined))
    await row('scratch', volumesSection()).getByText('available').waitFor()
  })

  it('backs up an attached volume only when told to back it up while attached', async () => {
    const attached = await createVolume('attached-data')
    const image = (await api('GET', '/image/v2/images')).body.images[0].id as string
    const made = await api('POST', '/compute/v2.1/servers', { server: { name: 'db-server', imageRef: image, flavorRef: '1', networks: 'none' } })
    assert.equal(made.status, 202, JSON.stringify(made.body))
    const serverId = made.body.server.id as string
    await until('db-server ACTIVE', 60_000, async () => ((await api('GET', `/compute/v2.1/servers/${serverId}`)).body.server.status === 'ACTIVE' ? true : undefined))
    assert.equal((await api('POST', `/compute/v2.1/servers/${serverId}/os-volume_attachments`, { volumeAttachment: { volumeId: attached } })).status, 200)
    await until('attached-data in-use', 60_000, async () => ((await volumeNamed('attached-data')).status === 'in-use' ? true : undefined))
    // Made behind the page's back: the page shows it after a reload.
    await page.reload()
    await row('attached-data', volumesSection()).getByText('in-use').waitFor()

    const refused = await submitForm(row('attached-data', volumesSection()).getByRole('button', { name: 'Back up…' }), 'Back up', async (d) => {
      await d.getByLabel('Backup name').fill('hot')
      assert.equal(await d.getByLabel('Back up while attached').isChecked(), false)
    })
    await refused.getByRole('alert').getByText(/force|in-use/i).waitFor()
    assert.equal(await backupNamed('hot'), undefined, 'nothing made')
    await refused.getByLabel('Back up while attached').check()
    await refused.getByRole('button', { name: 'Back up', exact: true }).click()
    await refused.waitFor({ state: 'detached' })
    await row('hot', backupsSection()).getByText('available').waitFor({ timeout: 60_000 })
    await row('attached-data', volumesSection()).getByText('in-use').waitFor()
    assert.equal((await volumeNamed('attached-data')).status, 'in-use', 'back to in-use after the backup')
    await row('hot', backupsSection()).getByRole('button', { name: 'Delete' }).click()
    await row('hot', backupsSection()).waitFor({ state: 'detached', timeout: 60_000 })
  })

  it('refuses to delete a backup an incremental one depends on, then deletes both', async () => {
    await row('db-full', backupsSection()).getByRole('button', { name: 'Delete' }).click()
    const failed = page.getByRole('dialog', { name: 'Delete failed' })
    await failed.getByRole('alert').getByText(/dependent|incremental/i).waitFor()
    await failed.getByRole('button', { name: /close/i }).click()
    assert.equal((await backupNamed('db-full'))?.status, 'available', 'nothing changed')

    await row('db-incr', backupsSection()).getByRole('button', { name: 'Delete' }).click()
    await row('db-incr', backupsSection()).waitFor({ state: 'detached', timeout: 60_000 })
    await row('db-full', backupsSection()).getByRole('button', { name: 'Delete' }).click()
    await backupsSection().getByText('No backups.').waitFor({ timeout: 60_000 })
    assert.deepEqual(await backups(), [])
  })
})
