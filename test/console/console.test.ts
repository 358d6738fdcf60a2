/**
 * The web console in Debian's Chromium against a real pcc server with simulated hypervisors: a user logs in,
 * creates a server and watches it become ACTIVE without reloading, reads its console log, uploads an image
 * (the progress bar moves), creates a volume and attaches it, downloads the RC file and uses it with the real
 * `openstack token issue`; an administrator creates a registration token, runs the `pcctl prep-node` line the
 * page shows on a scratch host root, and sees the host appear and become a hypervisor. Every page visited has a
 * label on every form control. Screenshots of the main pages are taken on the way (docs/console.md).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { browserMissing, launchBrowser, type TestBrowser } from '../../src/testkit/browser.js'
import { ADMIN_PASSWORD, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { stageHostRoot } from '../../src/testkit/host-root.js'
import { base32Encode, totpCode } from '../../src/server/crypto/totp.js'
import { until } from '../../src/testkit/compute-api.js'
import { adminApi, logIn, menu, screenshotDir, shot, unlabelledControls, type Api } from './helpers.js'

const PCCTL = fileURLToPath(new URL('../../release/pcctl.mjs', import.meta.url))
const missing = browserMissing()

function run(command: string, args: string[], env: Record<string, string>, input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { env, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => resolve({ code: err ? Number((err as NodeJS.ErrnoException).code) || 1 : 0, stdout, stderr }))
    child.stdin?.end(input ?? '')
  })
}

describe('web console in a real browser', { skip: missing, timeout: 600_000 }, () => {
  let server: TestServer
  let browser: TestBrowser
  let context: BrowserContext
  let page: Page
  let api: Api
  let dir: string
  let shots: string
  const hostRoots: string[] = []

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '300' } })
    api = await adminApi(server)
    dir = mkdtempSync(join(tmpdir(), 'pcc-console-test-'))
    shots = screenshotDir(dir)
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true })
    page = await context.newPage()
    page.setDefaultTimeout(20_000)
  })
  after(async () => {
    await browser?.close()
    for (const root of hostRoots) {
      const pidFile = join(root, 'run/pcc-agent.pid')
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0
      try {
        if (pid) process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
      rmSync(root, { recursive: true, force: true })
    }
    await server?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('refuses a wrong password saying what to do, then logs in and shows quota usage as charts', async () => {
    await logIn(page, server, 'admin', 'not-the-password')
    const alert = page.getByRole('alert')
    await alert.waitFor()
    assert.match(await alert.innerText(), /user name, password or domain is not right/)
    assert.match(await alert.innerText(), /Check them and try again/)
    await shot(page, shots, 'login')
    await page.getByLabel('Password').fill(ADMIN_PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.getByRole('img', { name: /^Servers: 0 of 10$/ }).waitFor()
    await page.getByRole('img', { name: /^Volume storage: 0 GiB of 1,000 GiB$/ }).waitFor()
    await page.getByRole('img', { name: /^Security groups: \d+ of 10$/ }).waitFor()
    assert.deepEqual(await unlabelledControls(page), [])
    await shot(page, shots, 'overview')
  })

  it('creates a server and shows it reach ACTIVE without reloading, polling only for changes', async () => {
    const polls: string[] = []
    page.on('request', (request) => request.url().includes('changes-since') && polls.push(request.url()))
    await menu(page, 'Servers')
    // A reload would drop this mark.
    await page.evaluate('window.sameDocument = true')
    await page.getByRole('button', { name: 'Create server' }).click()
    const dialog = page.getByRole('dialog', { name: 'Create server' })
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill('web-1')
    await dialog.getByLabel('User data').fill('#!/bin/sh\necho hello from the console test')
    assert.deepEqual(await unlabelledControls(page), [])
    await shot(page, shots, 'server-create')
    await dialog.getByRole('button', { name: 'Create', exact: true }).click()
    const row = page.getByRole('row').filter({ hasText: 'web-1' })
    await row.waitFor()
    await row.getByText('ACTIVE').waitFor({ timeout: 60_000 })
    assert.equal(await page.evaluate('window.sameDocument'), true, 'the page was not reloaded')
    assert.ok(polls.length > 0, 'the list asked for changes-since')
    assert.ok(polls.every((url) => !url.includes('marker')), 'polls ask for changes, not pages')
    const servers = await api('GET', '/compute/v2.1/servers/detail?name=web-1')
    assert.equal(servers.body.servers[0].status, 'ACTIVE')
    assert.equal(Buffer.from(servers.body.servers[0]['OS-EXT-SRV-ATTR:user_data'], 'base64').toString(), '#!/bin/sh\necho hello from the console test')
    await shot(page, shots, 'servers')
  })

  it('picks up a server another client creates and deletes, without reloading', async () => {
    await menu(page, 'Servers')
    await page.evaluate('window.sameDocument = true')
    const created = await api('POST', '/compute/v2.1/servers', { server: { name: 'cli-made', flavorRef: '1', imageRef: (await api('GET', '/image/v2/images')).body.images[0].id, networks: 'auto' } })
    assert.equal(created.status, 202)
    const row = page.getByRole('row').filter({ hasText: 'cli-made' })
    await row.getByText('ACTIVE').waitFor({ timeout: 60_000 })
    assert.equal((await api('DELETE', `/compute/v2.1/servers/${created.body.server.id}`)).status, 204)
    await row.waitFor({ state: 'detached', timeout: 60_000 })
    assert.equal(await page.evaluate('window.sameDocument'), true, 'the page was not reloaded')
  })

  it('shows a server with its actions, console log and action log; an action changes its status in place', async () => {
    await page.getByRole('link', { name: 'web-1' }).click()
    await page.getByRole('heading', { name: 'web-1' }).waitFor()
    await page.getByRole('toolbar', { name: 'Server actions' }).getByRole('button', { name: 'Stop' }).click()
    await page.getByRole('toolbar', { name: 'Server actions' }).getByRole('button', { name: 'Start' }).waitFor({ timeout: 60_000 })
    assert.equal((await api('GET', '/compute/v2.1/servers/detail?name=web-1')).body.servers[0].status, 'SHUTOFF')
    await page.getByRole('toolbar', { name: 'Server actions' }).getByRole('button', { name: 'Start' }).click()
    await page.getByRole('toolbar', { name: 'Server actions' }).getByRole('button', { name: 'Stop' }).waitFor({ timeout: 60_000 })
    await shot(page, shots, 'server')
    await page.getByRole('tab', { name: 'Log', exact: true }).click()
    const log = page.getByLabel('Console log')
    await until('the console log', 20_000, async () => ((await log.innerText()).includes('login:') ? true : undefined))
    assert.match(await log.innerText(), /web-1 login:/)
    await page.getByRole('tab', { name: 'Action log' }).click()
    for (const action of ['create', 'stop', 'start']) await page.getByRole('cell', { name: action, exact: true }).first().waitFor()
  })

  it('opens the serial console in the page: the guest output shows and a typed command answers', async () => {
    const server = (await api('GET', '/compute/v2.1/servers/detail?name=web-1')).body.servers[0]
    await page.getByRole('tab', { name: 'Console' }).click()
    const terminal = page.locator('.xterm-rows')
    const screen = async () => (await terminal.innerText()).replace(/\u00a0/g, ' ')
    await until('the login prompt on the serial console', 30_000, async () => ((await screen()).includes('web-1 login:') ? true : undefined))
    assert.match(await screen(), /Linux version/, 'the boot lines came first')
    await page.getByLabel('Serial console terminal').click()
    await page.keyboard.type('root\r')
    await until('the shell prompt', 15_000, async () => ((await screen()).includes('root@web-1') ? true : undefined))
    await page.keyboard.type('cat /var/lib/cloud/data/instance-id\r')
    await until('the command to answer', 15_000, async () => ((await screen()).includes(server.id) ? true : undefined))
    await shot(page, shots, 'serial-console')
    // A simulated host has no display: the API refuses a VNC console, and the page says why (no tab stays open).
    await page.getByRole('button', { name: 'Open VNC console in a new tab' }).click()
    const refusal = page.getByRole('alert').filter({ hasText: 'No VNC console' })
    await refusal.waitFor()
    assert.match(await refusal.innerText(), /VNC is not available on simulated hosts/)
    assert.equal(context.pages().length, 1, 'the blank tab was closed again')
    // The viewer itself runs (noVNC's modules load and start) and reports a refused token in words.
    const viewer = await context.newPage()
    const errors: string[] = []
    viewer.on('pageerror', (e) => errors.push(e.message))
    await viewer.goto(`${page.url().split('#')[0]}console/vnc.html?path=console/websocket%3Ftoken%3Dnot-a-token`)
    await until('the viewer to report the refusal', 20_000, async () => (/failed|lost/.test(await viewer.locator('#status').innerText()) ? true : undefined))
    assert.match(await viewer.locator('#status').innerText(), /console link may have expired/)
    assert.deepEqual(errors, [])
    await viewer.close()
  })

  it('says what to do next when the API refuses: more servers than the quota allows', async () => {
    await menu(page, 'Servers')
    await page.getByRole('button', { name: 'Create server' }).click()
    const dialog = page.getByRole('dialog', { name: 'Create server' })
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill('too-many')
    await dialog.getByLabel('Count').fill('50')
    await dialog.getByRole('button', { name: 'Create', exact: true }).click()
    const alert = dialog.getByRole('alert')
    await alert.waitFor()
    assert.match(await alert.innerText(), /Quota exceeded for instances/)
    assert.match(await alert.innerText(), /ask an administrator to raise the quota \(Admin → Quotas\)/)
    assert.match(await alert.innerText(), /Request id: req-/)
    await shot(page, shots, 'error')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    assert.equal((await api('GET', '/compute/v2.1/servers?name=too-many')).body.servers.length, 0, 'nothing was created')
  })

  it('uploads an image from a file with a moving progress bar', async () => {
    const file = join(dir, 'disk.qcow2')
    const data = randomBytes(96 * 1024 * 1024)
    writeFileSync(file, data)
    await menu(page, 'Images')
    await page.getByRole('button', { name: 'Upload image' }).click()
    const dialog = page.getByRole('dialog', { name: 'Upload image' })
    await dialog.getByLabel('Image file').setInputFiles(file)
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill('uploaded-disk')
    assert.deepEqual(await unlabelledControls(page), [])
    // Record every value the progress bar takes, in the page, from the moment it appears.
    // (In-page code is a string: this project compiles its tests without the DOM's types.)
    await page.evaluate(`{
      const seen = (window.progressSeen = [])
      const record = () => {
        const bar = document.querySelector('progress')
        if (bar) seen.push(bar.value / bar.max)
      }
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['value'] })
    }`)
    await dialog.getByRole('button', { name: 'Upload', exact: true }).click()
    await dialog.getByText(/Uploading: /).waitFor()
    await shot(page, shots, 'image-upload')
    await dialog.waitFor({ state: 'detached', timeout: 120_000 })
    const seen = (await page.evaluate('window.progressSeen')) as number[]
    assert.ok(seen.some((v) => v > 0 && v < 1), `the bar showed partial progress: ${seen.map((v) => v.toFixed(2)).join(' ')}`)
    assert.ok(seen.some((v) => v === 1), 'the bar reached the end')
    const row = page.getByRole('row').filter({ hasText: 'uploaded-disk' })
    await row.getByText('active').waitFor()
    const image = (await api('GET', '/image/v2/images?name=uploaded-disk')).body.images[0]
    assert.equal(image.size, data.length)
    assert.equal(image.disk_format, 'qcow2', 'the format follows the file name')
    assert.equal(image.checksum, createHash('md5').update(data).digest('hex'))
    await shot(page, shots, 'images')
  })

  it('creates a volume and attaches it to the server', async () => {
    await menu(page, 'Volumes')
    await page.getByRole('button', { name: 'Create volume' }).click()
    const dialog = page.getByRole('dialog', { name: 'Create volume' })
    await dialog.getByRole('textbox', { name: 'Name', exact: true }).fill('data-1')
    await dialog.getByLabel('Size (GiB)').fill('2')
    await dialog.getByRole('button', { name: 'Create volume' }).click()
    const row = page.getByRole('row').filter({ hasText: 'data-1' })
    await row.getByText('available').waitFor({ timeout: 30_000 })
    await row.getByRole('button', { name: 'Attach…' }).click()
    const attach = page.getByRole('dialog', { name: 'Attach' })
    await attach.getByLabel('Server').selectOption({ label: 'web-1' })
    await attach.getByRole('button', { name: 'Attach' }).click()
    await row.getByText('in-use').waitFor({ timeout: 60_000 })
    await row.getByRole('link', { name: /web-1 on \/dev\/vd/ }).waitFor()
    assert.deepEqual(await unlabelledControls(page), [])
    await shot(page, shots, 'volumes')
    const volume = (await api('GET', '/volume/v3/volumes/detail?name=data-1')).body.volumes[0]
    const server = (await api('GET', '/compute/v2.1/servers/detail?name=web-1')).body.servers[0]
    assert.equal(volume.status, 'in-use')
    assert.equal(volume.attachments[0].server_id, server.id)
    assert.deepEqual(server['os-extended-volumes:volumes_attached'].map((v: { id: string }) => v.id), [volume.id])
  })

  it('downloads the openrc file, which the real openstack client uses to issue a token', async () => {
    await menu(page, 'API Access')
    await shot(page, shots, 'api-access')
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download OpenStack RC file' }).click()])
    assert.equal(download.suggestedFilename(), 'admin-openrc.sh')
    const rc = join(dir, 'admin-openrc.sh')
    await download.saveAs(rc)
    const text = readFileSync(rc, 'utf8')
    assert.match(text, new RegExp(`export OS_AUTH_URL="${server.url}/identity/v3"`))
    const base = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }
    // With OS_PASSWORD set first (the spec's rule 1), and with the password typed at the file's question.
    const given = await run('bash', ['-c', `. ${rc} && openstack token issue -f json`], { ...base, OS_PASSWORD: ADMIN_PASSWORD })
    assert.equal(given.code, 0, given.stderr)
    const typed = await run('bash', ['-c', `. ${rc} && openstack token issue -f json`], base, `${ADMIN_PASSWORD}\n`)
    assert.equal(typed.code, 0, typed.stderr)
    assert.match(typed.stdout, /Please enter your OpenStack Password for project admin as user admin/)
    const token = JSON.parse(given.stdout) as { project_id: string; user_id: string; id: string }
    const session = JSON.parse((await page.evaluate(`localStorage.getItem('pcc.session')`)) as string) as { project: { id: string }; user: { id: string } }
    assert.equal(token.project_id, session.project.id)
    assert.equal(token.user_id, session.user.id)
    const wrong = await run('bash', ['-c', `. ${rc} && openstack token issue -f json`], { ...base, OS_PASSWORD: 'wrong' })
    assert.notEqual(wrong.code, 0, 'a wrong password is refused: the file carries no secret of its own')

    const [yamlDownload] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download clouds.yaml' }).click()])
    const cloudsDir = join(dir, 'openstack')
    await yamlDownload.saveAs(join(cloudsDir, 'clouds.yaml'))
    const viaYaml = await run('openstack', ['--os-cloud', 'openstack', 'token', 'issue', '-f', 'json'], { ...base, OS_CLIENT_CONFIG_FILE: join(cloudsDir, 'clouds.yaml'), OS_PASSWORD: ADMIN_PASSWORD })
    assert.equal(viaYaml.code, 0, viaYaml.stderr)
    assert.equal((JSON.parse(viaYaml.stdout) as { project_id: string }).project_id, session.project.id)
    const line = await page.getByLabel('pcctl config set command').innerText()
    assert.equal(line, `pcctl config set --account-url ${server.url} --username admin --region RegionOne --tenant admin`)
    // The install line, run as shown but without root (the page's own alternative), puts a pcctl that runs on PATH.
    const install = await page.getByLabel('pcctl install command').innerText()
    assert.equal(install, `curl -fsSL ${server.url}/downloads/install.sh | sudo bash`)
    const prefix = join(dir, 'prefix')
    const installed = await run('bash', ['-c', install.replace('| sudo bash', `| PCCTL_PREFIX=${prefix} bash`)], base)
    assert.equal(installed.code, 0, installed.stderr)
    const version = await run('pcctl', ['--version'], { ...base, PATH: `${prefix}/bin:${base.PATH}` })
    assert.equal(version.code, 0, version.stderr)
  })

  it('as an admin, creates a registration token and sees the host the shown prep-node line onboards appear', async () => {
    await menu(page, 'Onboarding')
    await page.getByLabel('Note').fill('console test host')
    await page.getByRole('button', { name: 'Create registration token' }).click()
    const commands = await page.getByLabel('Commands to run on the host').innerText()
    await shot(page, shots, 'onboarding')
    const [install, prep] = commands.split('\n')
    assert.equal(install, `curl -fsSL ${server.url}/downloads/install.sh | sudo bash`)
    assert.equal((await fetch(`${server.url}/downloads/install.sh`)).status, 200)
    const args = prep.split(' ')
    assert.deepEqual(args.slice(0, 3), ['sudo', 'pcctl', 'prep-node'])
    const root = stageHostRoot({ hostname: 'console-node-1' })
    hostRoots.push(root)
    // The released pcctl, as the install line puts it on the host, run with exactly the arguments shown.
    const result = await run(process.execPath, [PCCTL, ...args.slice(2)], { PATH: process.env.PATH ?? '', HOME: dir, PCCTL_HOST_ROOT: root })
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /console-node-1 is registered/)
    const row = page.getByRole('row').filter({ hasText: 'console-node-1' })
    await row.waitFor({ timeout: 30_000 })
    await row.getByText('UP').waitFor({ timeout: 30_000 })
    await row.getByRole('button', { name: 'Make hypervisor' }).click()
    await row.getByText('hypervisor (ok)').waitFor({ timeout: 60_000 })
    // The token was single use: the same line on another host is refused, and the host does not appear.
    const again = stageHostRoot({ hostname: 'console-node-2' })
    hostRoots.push(again)
    const reused = await run(process.execPath, [PCCTL, ...args.slice(2)], { PATH: process.env.PATH ?? '', HOME: dir, PCCTL_HOST_ROOT: again })
    assert.equal(reused.code, 1, reused.stdout)
    assert.match(reused.stderr, /agent stopped before registering/)
    assert.match(readFileSync(join(again, 'var/log/pcc/agent.log'), 'utf8'), /registration refused/)
    const hosts = (await api('GET', '/resmgr/v1/hosts')).body as { info: { hostname: string } }[]
    assert.ok(!hosts.some((h) => h.info.hostname === 'console-node-2'))
    await menu(page, 'Hosts')
    // The hosts table comes first; the network agents below have rows of the host too.
    await page.getByRole('row').filter({ hasText: 'console-node-1' }).first().waitFor()
    await shot(page, shots, 'hosts')
    await menu(page, 'Hypervisors')
    await page.getByRole('heading', { name: /console-node-1/ }).waitFor({ timeout: 30_000 })
    await shot(page, shots, 'hypervisors')
  })

  it('switches project: the pages and the RC file follow the new project', async () => {
    const project = (await api('POST', '/identity/v3/projects', { project: { name: 'second', description: '' } })).body.project
    const admin = (await api('GET', '/identity/v3/roles?name=admin')).body.roles[0]
    const me = JSON.parse((await page.evaluate(`localStorage.getItem('pcc.session')`)) as string) as { user: { id: string } }
    assert.equal((await api('PUT', `/identity/v3/projects/${project.id}/users/${me.user.id}/roles/${admin.id}`)).status, 204)
    await page.reload()
    await page.getByLabel('Project').selectOption({ label: 'second' })
    await page.getByText('Quota usage of project second').waitFor()
    await menu(page, 'Servers')
    await page.getByText('No servers yet').waitFor()
    await menu(page, 'API Access')
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download OpenStack RC file' }).click()])
    assert.equal(download.suggestedFilename(), 'second-openrc.sh')
    const rc = join(dir, 'second-openrc.sh')
    await download.saveAs(rc)
    const issued = await run('bash', ['-c', `. ${rc} && openstack token issue -f json`], { PATH: process.env.PATH ?? '', HOME: dir, OS_PASSWORD: ADMIN_PASSWORD })
    assert.equal(issued.code, 0, issued.stderr)
    assert.equal((JSON.parse(issued.stdout) as { project_id: string }).project_id, project.id)
    await page.getByLabel('Project').selectOption({ label: 'admin' })
    await page.getByText('Quota usage of project admin').waitFor()
  })

  it('logs in a user whose account needs a TOTP code, in a second browser profile', async () => {
    const project = (await api('GET', '/identity/v3/projects?name=admin')).body.projects[0]
    const member = (await api('GET', '/identity/v3/roles?name=member')).body.roles[0]
    const user = (
      await api('POST', '/identity/v3/users', { user: { name: 'mfa-user', password: 'mfa-user-secret', default_project_id: project.id, options: { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']] } } })
    ).body.user
    assert.equal((await api('PUT', `/identity/v3/projects/${project.id}/users/${user.id}/roles/${member.id}`)).status, 204)
    const seed = randomBytes(20)
    assert.equal((await api('POST', '/identity/v3/credentials', { credential: { type: 'totp', user_id: user.id, blob: base32Encode(seed) } })).status, 201)
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    try {
      const mfaPage = await other.newPage()
      // With the keyboard only: the user name has the focus, Tab moves on, Enter submits; the code field takes it next.
      await mfaPage.goto(`${server.url}/`)
      await mfaPage.getByLabel('User name').waitFor()
      await mfaPage.keyboard.type('mfa-user')
      await mfaPage.keyboard.press('Tab')
      await mfaPage.keyboard.type('mfa-user-secret')
      await mfaPage.keyboard.press('Enter')
      const code = mfaPage.getByLabel('Authentication code')
      await code.waitFor()
      assert.equal(await mfaPage.evaluate('document.activeElement.id'), 'f-passcode', 'the code field has the focus')
      await shot(mfaPage, shots, 'login-totp')
      await code.fill(totpCode(seed, Date.now()) === '000000' ? '000001' : '000000')
      await mfaPage.getByRole('button', { name: 'Verify' }).click()
      assert.match(await mfaPage.getByRole('alert').innerText(), /code was not accepted/)
      // A code of the current step (the server also takes the previous one, so a step ending meanwhile is fine).
      await code.fill(totpCode(seed, Date.now()))
      await mfaPage.getByRole('button', { name: 'Verify' }).click()
      await mfaPage.getByRole('heading', { name: 'Overview' }).waitFor()
      assert.equal(await mfaPage.getByRole('link', { name: 'Hosts' }).count(), 0, 'a member sees no admin pages')
      await mfaPage.goto(`${server.url}/#/admin/hosts`)
      await mfaPage.getByText('This page needs the admin role').waitFor()
      await mfaPage.getByRole('button', { name: 'Log out' }).click()
      await mfaPage.getByRole('button', { name: 'Log in' }).waitFor()
    } finally {
      await other.close()
    }
  })

  it('labels every control of the other pages, and draws the topology', async () => {
    for (const [link, heading] of [
      ['Networks', 'Networks'],
      ['Routers', 'Routers'],
      ['Floating IPs', 'Floating IPs'],
      ['Security groups', 'Security groups'],
      ['Key pairs', 'Key pairs'],
      ['Flavors', 'Flavors'],
      ['Quotas', 'Quotas'],
      ['Users', 'Users'],
      ['Role assignments', 'Role assignments'],
    ]) {
      await menu(page, link)
      await page.getByRole('heading', { name: heading, exact: true }).waitFor()
      await page.waitForLoadState('networkidle')
      assert.deepEqual(await unlabelledControls(page), [], link)
    }
    await menu(page, 'Topology')
    const drawing = page.getByRole('img', { name: /Network topology: 1 networks, 0 routers, 1 servers/ })
    await drawing.waitFor()
    await shot(page, shots, 'topology')
  })

  it('tells the owner a server was restarted on another host after its host failed', async () => {
    const created = await api('POST', '/compute/v2.1/servers', { server: { name: 'evacuee', imageRef: (await api('GET', '/image/v2/images')).body.images[0].id, flavorRef: '1', networks: 'none' } })
    const id = created.body.server.id as string
    const show = async () => (await api('GET', `/compute/v2.1/servers/${id}`)).body.server
    await until('the server ACTIVE', 60_000, async () => ((await show()).status === 'ACTIVE' ? true : undefined))
    const source = (await show())['OS-EXT-SRV-ATTR:host'] as string
    const service = (await api('GET', `/compute/v2.1/os-services?host=${source}`)).body.services[0]
    // The host stops answering as far as the control plane knows; an admin (or PCC_LOST_HOST_POLICY=evacuate) moves it.
    assert.equal((await api('PUT', `/compute/v2.1/os-services/${service.id}`, { forced_down: true })).status, 200)
    try {
      assert.equal((await api('POST', `/compute/v2.1/servers/${id}/action`, { evacuate: {} })).status, 200)
      await until('the server ACTIVE elsewhere', 60_000, async () => {
        const s = await show()
        return s.status === 'ACTIVE' && s['OS-EXT-SRV-ATTR:host'] !== source ? true : undefined
      })
    } finally {
      await api('PUT', `/compute/v2.1/os-services/${service.id}`, { forced_down: false })
    }
    await page.goto(`${server.url}/#/servers/${id}`)
    await page.getByRole('heading', { name: 'evacuee' }).waitFor()
    await page.getByRole('status').filter({ hasText: /Restarted on another host .* because the host it ran on failed/ }).waitFor()
    await shot(page, shots, 'server-evacuated')
    await page.getByRole('tab', { name: 'Action log' }).click()
    await page.getByRole('cell', { name: 'evacuate', exact: true }).waitFor()
    assert.equal((await api('DELETE', `/compute/v2.1/servers/${id}`)).status, 204)
  })
})
