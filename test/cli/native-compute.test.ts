/**
 * pcctl's native compute, image and volume commands against a real server, each next to the real `openstack`
 * client (python3-openstackclient 6.0) on the same cloud: `-f json` output must be the same data, tables must
 * have the same column headers, and creates, deletes, sets and actions must really happen (checked through the
 * API or a second command). openstack costs 1–2 s of Python start-up per call, so it is called only where a
 * comparison needs it, a few at a time.
 */
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { cliSandbox, type CliRun } from '../../src/testkit/cli.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'
import { defaultImageName } from '../../src/server/image/default-image.js'

type Row = Record<string, unknown>
const execFileAsync = promisify(execFile)

describe('pcctl native compute, image and volume commands next to openstack', { timeout: 300_000 }, () => {
  let server: TestServer
  let env: Record<string, string>
  let token: string
  const sandbox = cliSandbox()
  const dir = mkdtempSync(join(tmpdir(), 'pcctl-compute-'))

  const pcctl = (args: string[]): Promise<CliRun> => sandbox.run(args, env)
  const pcJson = async <T = Row>(args: string[]): Promise<T> => {
    const r = await pcctl([...args, '-f', 'json'])
    assert.equal(r.code, 0, `pcctl ${args.join(' ')}: ${r.stderr}`)
    return JSON.parse(r.stdout) as T
  }
  const osJson = <T = Row>(args: string[]) => openstackJson<T>(args, env)
  const omit = (row: Row, keys: string[]) => Object.fromEntries(Object.entries(row).filter(([k]) => !keys.includes(k)))

  /** Both clients' `-f json` for the same command, read at the same moment. */
  async function sameData(args: string[]): Promise<unknown> {
    const [mine, theirs] = await Promise.all([pcJson<unknown>(args), osJson<unknown>(args)])
    assert.deepEqual(mine, theirs, `pcctl ${args.join(' ')} -f json differs from openstack's`)
    return mine
  }

  /** The header cells of a cliff table (its second line). */
  const headerOf = (table: string) => table.split('\n')[1].split('|').slice(1, -1).map((c) => c.trim())

  /** The same column headers, then the same text (alignment, None/True, formatted cells); other formats: the same text. */
  async function sameTable(args: string[]): Promise<void> {
    const [mine, theirs] = await Promise.all([pcctl(args), openstack(args, env)])
    assert.equal(mine.code, 0, mine.stderr)
    assert.equal(theirs.code, 0, theirs.stderr)
    if (!args.includes('-f')) assert.deepEqual(headerOf(mine.stdout), headerOf(theirs.stdout), `pcctl ${args.join(' ')} columns`)
    assert.equal(mine.stdout, theirs.stdout, `pcctl ${args.join(' ')} output`)
  }

  /** Runs the comparisons two at a time: the machine has two cores and each openstack call is a Python start. */
  async function pairwise(jobs: (() => Promise<unknown>)[]): Promise<void> {
    for (let i = 0; i < jobs.length; i += 2) await Promise.all(jobs.slice(i, i + 2).map((job) => job()))
  }

  async function api<T = Row>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'openstack-api-version': 'compute 2.96', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T }
  }

  async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await probe()
      if (value !== undefined) return value
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  const serverStatus = async (id: string) => (await api<{ server: { status: string; 'OS-EXT-STS:task_state': string | null } }>('GET', `/compute/v2.1/servers/${id}`)).body.server
  const settled = (id: string, status: string) => until(async () => {
    const s = await serverStatus(id)
    return s.status === status && !s['OS-EXT-STS:task_state'] ? s : undefined
  }, `server ${id} ${status}`)

  before(async () => {
    // Simulated hypervisor steps of 30 ms: builds and actions take a fraction of a second, with progress to show.
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: '30' } })
    env = adminEnv(server)
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    const net = await api<{ network: { id: string } }>('POST', '/network/v2.0/networks', { network: { name: 'net1' } })
    assert.equal(net.status, 201)
    webImageId = (await api<{ images: { id: string; name: string }[] }>('GET', '/image/v2/images')).body.images.find((i) => i.name === defaultImageName())!.id
  })
  after(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  let webId = ''
  let webImageId = ''

  it('keypair create without --public-key prints the private key, and the key pair exists', async () => {
    const r = await pcctl(['keypair', 'create', 'kp1'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^-----BEGIN (RSA )?PRIVATE KEY-----\n[\s\S]+-----END (RSA )?PRIVATE KEY-----\n?$/)
    const listed = await api<{ keypairs: { keypair: { name: string } }[] }>('GET', '/compute/v2.1/os-keypairs')
    assert.deepEqual(listed.body.keypairs.map((k) => k.keypair.name), ['kp1'])
  })

  it('server create --wait prints each step on stderr, then the server as openstack server show prints it', async () => {
    const r = await pcctl([
      'server', 'create', '--image', defaultImageName(), '--flavor', 'm1.tiny', '--network', 'net1', '--property', 'role=web', '--key-name', 'kp1',
      '--security-group', 'default', '--wait', 'web-1', '-f', 'json',
    ])
    assert.equal(r.code, 0, r.stderr)
    // Each status the wait saw, once, ending with ACTIVE; nothing else (no progress: Nova keeps it 0 while building).
    assert.match(r.stderr, /^(Status: BUILD( \([a-z_]+\))?\n)+Status: ACTIVE\n$/)
    const created = JSON.parse(r.stdout) as Row
    assert.equal(created.status, 'ACTIVE')
    // Only the create answer carries the generated admin password; the rest is the server as it is now.
    assert.match(String(created.adminPass), /.{8,}/)
    webId = String(created.id)
    assert.deepEqual(omit(created, ['adminPass']), await osJson(['server', 'show', 'web-1']))
    assert.deepEqual(created.properties, { role: 'web' })
    assert.equal(created.key_name, 'kp1')
    assert.equal(created.flavor, 'm1.tiny (1)')
  })

  it('server create without --wait answers with the fields openstack server create answers with', async () => {
    const args = (name: string) => ['server', 'create', '--image', defaultImageName(), '--flavor', '1', '--network', 'net1', '--property', 'role=db', name]
    const [mine, theirs] = await Promise.all([pcJson(args('db-1')), osJson(args('db-2'))])
    assert.deepEqual(Object.keys(mine).sort(), Object.keys(theirs).sort())
    // Ids, names, the generated password and times are the servers' own; the rest is what both clients asked for.
    const own = ['id', 'name', 'adminPass', 'created', 'updated', 'OS-EXT-SRV-ATTR:instance_name', 'status', 'OS-EXT-STS:vm_state', 'OS-EXT-STS:task_state',
      'OS-EXT-STS:power_state', 'progress', 'OS-SRV-USG:launched_at', 'OS-EXT-SRV-ATTR:host', 'OS-EXT-SRV-ATTR:hypervisor_hostname', 'hostId', 'OS-EXT-AZ:availability_zone']
    assert.deepEqual(omit(mine, own), omit(theirs, own))
    await Promise.all([settled(String(mine.id), 'ACTIVE'), settled(String(theirs.id), 'ACTIVE')])
  })

  it('lists and shows are the same data as openstack prints', async () => {
    await pairwise([
      () => sameData(['server', 'list']),
      () => sameData(['server', 'list', '--long']),
      () => sameData(['server', 'show', 'web-1']),
      () => sameData(['flavor', 'list', '--long']),
      () => sameData(['flavor', 'show', 'm1.tiny']),
      () => sameData(['image', 'list', '--long']),
      () => sameData(['image', 'show', defaultImageName()]),
      () => sameData(['keypair', 'list']),
      () => sameData(['keypair', 'show', 'kp1']),
      () => sameData(['hypervisor', 'list', '--long']),
    ])
  })

  it('tables and the other text formats are what openstack prints', async () => {
    await pairwise([
      () => sameTable(['server', 'list', '--long']),
      () => sameTable(['flavor', 'list', '--long']),
      () => sameTable(['image', 'list', '--long']),
      () => sameTable(['hypervisor', 'list', '--long']),
      () => sameTable(['keypair', 'list']),
      // The text formats print Python's str() of each value (value, csv, shell) and PyYAML's document.
      () => sameTable(['server', 'list', '--long', '-f', 'csv']),
      () => sameTable(['server', 'show', 'web-1', '-f', 'shell']),
      () => sameTable(['flavor', 'list', '--long', '-f', 'value']),
      () => sameTable(['flavor', 'show', 'm1.tiny', '-f', 'yaml']),
    ])
  })

  it('finds a server by id or by name, and says as openstack does when there is none or several', async () => {
    assert.deepEqual(await pcJson(['server', 'show', webId]), await pcJson(['server', 'show', 'web-1']))
    // Names are regular expressions to the API: a name with one in it must still match only itself.
    const [mine, theirs] = await Promise.all([pcctl(['server', 'show', 'web.1']), openstack(['server', 'show', 'web.1'], env)])
    assert.equal(mine.code, 1)
    assert.equal(theirs.code, 1)
    assert.equal(mine.stderr, `Error: ${theirs.stderr}`)
    assert.equal(mine.stderr, "Error: No server with a name or ID of 'web.1' exists.\n")

    const dups: string[] = []
    for (let i = 0; i < 2; i++) {
      const r = await api<{ server: { id: string } }>('POST', '/compute/v2.1/servers', { server: { name: 'dup', imageRef: webImageId, flavorRef: '1', networks: 'none' } })
      dups.push(r.body.server.id)
    }
    const ambiguous = await pcctl(['server', 'show', 'dup'])
    assert.equal(ambiguous.code, 1)
    assert.equal(ambiguous.stderr, "Error: More than one server exists with the name 'dup'.\n")
    const network = await pcctl(['server', 'create', '--image', defaultImageName(), '--flavor', '1', '--network', 'no-such-net', 'web-x'])
    assert.equal(network.code, 1)
    assert.equal(network.stderr, 'Error: No Network found for no-such-net\n')
    assert.equal((await api<{ servers: unknown[] }>('GET', '/compute/v2.1/servers?name=web-x')).body.servers.length, 0, 'nothing created')
    const flavor = await pcctl(['flavor', 'show', 'nope'])
    assert.equal(flavor.code, 1)
    assert.equal(flavor.stderr, 'Error: No Flavor found for nope\n')

    // Several ids at once, waiting until they are gone.
    const deleted = await pcctl(['server', 'delete', '--wait', ...dups])
    assert.equal(deleted.code, 0, deleted.stderr)
    for (const id of dups) assert.equal((await api('GET', `/compute/v2.1/servers/${id}`)).status, 404)
  })

  it('server set changes the name, properties, description and tags', async () => {
    const r = await pcctl(['server', 'set', '--name', 'web-1b', '--property', 'tier=front', '--description', 'the web server', '--tag', 'blue', '--tag', 'green', 'web-1'])
    assert.equal(r.code, 0, r.stderr)
    const { body } = await api<{ server: Row }>('GET', `/compute/v2.1/servers/${webId}`)
    assert.equal(body.server.name, 'web-1b')
    assert.deepEqual(body.server.metadata, { role: 'web', tier: 'front' })
    assert.equal(body.server.description, 'the web server')
    assert.deepEqual([...(body.server.tags as string[])].sort(), ['blue', 'green'])
  })

  it('reboot, stop, start, resize and its confirm and revert act on the server', async () => {
    const reboot = await pcctl(['server', 'reboot', '--hard', '--wait', 'web-1b'])
    assert.equal(reboot.code, 0, reboot.stderr)
    assert.equal(reboot.stdout, 'Complete\n')
    const actions = await api<{ instanceActions: { action: string }[] }>('GET', `/compute/v2.1/servers/${webId}/os-instance-actions`)
    assert.ok(actions.body.instanceActions.some((a) => a.action === 'reboot'), 'a reboot action is recorded')

    assert.equal((await pcctl(['server', 'stop', 'web-1b'])).code, 0)
    await settled(webId, 'SHUTOFF')
    assert.equal((await pcctl(['server', 'start', webId])).code, 0)
    await settled(webId, 'ACTIVE')

    const resize = await pcctl(['server', 'resize', '--flavor', 'm1.small', '--wait', 'web-1b'])
    assert.equal(resize.code, 0, resize.stderr)
    assert.equal((await serverStatus(webId)).status, 'VERIFY_RESIZE')
    assert.equal((await pcctl(['server', 'resize', 'revert', 'web-1b'])).code, 0)
    await settled(webId, 'ACTIVE')
    assert.equal((await pcJson(['server', 'show', 'web-1b', '-c', 'flavor'])).flavor, 'm1.tiny (1)')

    assert.equal((await pcctl(['server', 'resize', '--flavor', 'm1.small', '--wait', 'web-1b'])).code, 0)
    assert.equal((await pcctl(['server', 'resize', 'confirm', 'web-1b'])).code, 0)
    await settled(webId, 'ACTIVE')
    assert.equal((await pcJson(['server', 'show', 'web-1b', '-c', 'flavor'])).flavor, 'm1.small (2)')
  })

  it('console log show --lines prints the end of the console as openstack does (also as server console log)', async () => {
    const [mine, alias, theirs] = await Promise.all([
      pcctl(['console', 'log', 'show', '--lines', '2', 'web-1b']),
      pcctl(['server', 'console', 'log', '--lines', '2', 'web-1b']),
      openstack(['console', 'log', 'show', '--lines', '2', 'web-1b'], env),
    ])
    assert.equal(mine.code, 0, mine.stderr)
    assert.equal(mine.stdout, theirs.stdout)
    assert.equal(alias.stdout, theirs.stdout)
    assert.equal(mine.stdout.split('\n').length, 3)
  })

  it('flavor create takes every size flag; delete removes several and reports the one that is not there', async () => {
    const flags = ['--ram', '300', '--disk', '2', '--vcpus', '2', '--ephemeral', '1', '--swap', '128', '--private', '--property', 'hw:cpu_policy=dedicated']
    const [mine, theirs] = await Promise.all([pcJson(['flavor', 'create', ...flags, '--id', 'pc-f', 'pc.flavor']), osJson(['flavor', 'create', ...flags, '--id', 'os-f', 'os.flavor'])])
    assert.deepEqual(omit(mine, ['id', 'name']), omit(theirs, ['id', 'name']))
    assert.deepEqual({ id: mine.id, ram: mine.ram, swap: mine.swap, public: mine['os-flavor-access:is_public'] }, { id: 'pc-f', ram: 300, swap: 128, public: false })
    // flavor show adds the access list of a private flavor.
    await sameData(['flavor', 'show', 'pc.flavor'])

    const r = await pcctl(['flavor', 'delete', 'pc.flavor', 'os-f', 'nope'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, "Failed to delete flavor with name or ID 'nope': No Flavor found for nope\nError: 1 of 3 flavors failed to delete.\n")
    for (const id of ['pc-f', 'os-f']) assert.equal((await api('GET', `/compute/v2.1/flavors/${id}`)).status, 404)
  })

  it('keypair create --public-key imports the key as openstack does; show and delete', async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'id')])
    const [mine, theirs] = await Promise.all([pcJson(['keypair', 'create', '--public-key', join(dir, 'id.pub'), 'kp2']), osJson(['keypair', 'create', '--public-key', join(dir, 'id.pub'), 'kp3'])])
    assert.deepEqual(omit(mine, ['id', 'name']), omit(theirs, ['id', 'name']))
    await sameData(['keypair', 'show', 'kp2'])
    const r = await pcctl(['keypair', 'delete', 'kp2', 'kp3'])
    assert.equal(r.code, 0, r.stderr)
    const listed = await api<{ keypairs: { keypair: { name: string } }[] }>('GET', '/compute/v2.1/os-keypairs')
    assert.deepEqual(listed.body.keypairs.map((k) => k.keypair.name), ['kp1'])
  })

  it('image create --file uploads the file (same record as openstack creates); show, delete', async () => {
    const file = join(dir, 'disk.img')
    const data = randomBytes(3 * 1024 * 1024 + 17)
    writeFileSync(file, data)
    const flags = ['--file', file, '--disk-format', 'qcow2', '--container-format', 'bare', '--public', '--property', 'os_distro=cirros']
    const [mine, theirs] = await Promise.all([pcJson(['image', 'create', ...flags, 'pc-img']), osJson(['image', 'create', ...flags, 'os-img'])])
    // Each image has its own id, name, times and file URL; openstacksdk records the name in a property.
    const own = ['id', 'name', 'created_at', 'updated_at', 'file', 'properties']
    assert.deepEqual(omit(mine, own), omit(theirs, own))
    assert.deepEqual(omit(mine.properties as Row, ['owner_specified.openstack.object']), omit(theirs.properties as Row, ['owner_specified.openstack.object']))
    assert.equal((mine.properties as Row)['owner_specified.openstack.object'], 'images/pc-img')

    const shown = (await sameData(['image', 'show', 'pc-img'])) as Row
    assert.equal(shown.status, 'active')
    assert.equal(shown.size, data.length)
    assert.equal(shown.checksum, createHash('md5').update(data).digest('hex'))

    const r = await pcctl(['image', 'delete', 'pc-img', 'os-img'])
    assert.equal(r.code, 0, r.stderr)
    for (const id of [mine.id, theirs.id]) assert.equal((await api('GET', `/image/v2/images/${id}`)).status, 404)
  })

  it('volume create from an image, bootable; list, show and table columns as openstack; delete', async () => {
    const created = await pcJson(['volume', 'create', '--size', '1', '--image', defaultImageName(), '--bootable', '--availability-zone', 'nova', '--property', 'k=v', 'pc-vol'])
    assert.equal(created.size, 1)
    assert.deepEqual(created.properties, { k: 'v' })
    const id = String(created.id)
    const volume = await until(async () => {
      const v = (await api<{ volume: Row }>('GET', `/volume/v3/volumes/${id}`)).body.volume
      return v.status === 'available' ? v : undefined
    }, 'volume available')
    assert.equal(volume.bootable, 'true')
    assert.equal((volume.volume_image_metadata as Row).image_name, defaultImageName())
    await pairwise([() => sameData(['volume', 'show', 'pc-vol']), () => sameData(['volume', 'list', '--long']), () => sameTable(['volume', 'list', '--long'])])

    const r = await pcctl(['volume', 'delete', 'pc-vol'])
    assert.equal(r.code, 0, r.stderr)
    await until(async () => ((await api('GET', `/volume/v3/volumes/${id}`)).status === 404 ? true : undefined), 'volume deleted')
  })

  it('refuses usage mistakes with exit code 2 and a short message, never a stack trace', async () => {
    const cases: [string[], RegExp][] = [
      [['server', 'list', '--bogus'], /unknown flag --bogus for 'server list'/],
      [['server', 'create', '--image', defaultImageName(), 'x'], /the following arguments are required: --flavor/],
      [['server', 'create', '--image', defaultImageName(), '--flavor', '1', '--nic', 'net-id=a,port-id=b', 'x'], /either network or port should be specified but not both/],
      [['server', 'create', '--image', defaultImageName(), '--flavor', '1', '--nic', 'none', '--network', 'net1', 'x'], /cannot be used with any other --nic/],
      [['server', 'reboot', '--hard', '--soft', 'web-1b'], /argument --soft: not allowed with argument --hard/],
      [['server', 'show'], /the following arguments are required: <server>/],
      [['flavor', 'create', '--ram', 'lots', 'f'], /argument --ram: invalid int value: 'lots'/],
      [['image', 'create', '--disk-format', 'floppy', 'i'], /argument --disk-format: invalid choice: 'floppy'/],
      [['server', 'set', '--property', 'novalue', 'web-1b'], /Expected 'key=value' type, but got: novalue/],
      [['volume', 'create', 'v'], /--size is a required option/],
    ]
    for (const [args, message] of cases) {
      const r = await pcctl(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
    }
    // A server error is exit code 1 with the API's message, as openstack prints it.
    const r = await pcctl(['server', 'resize', 'confirm', 'web-1b'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /^Error: Cannot 'confirmResize' instance [0-9a-f-]+ while it is in vm_state active \(HTTP 409\) \(Request-ID: req-[0-9a-f-]+\)\n$/)
  })

  it('the release bundle (what users install) gives the same answers, YAML included', async () => {
    // The bundle embeds its YAML, OpenPGP and tar libraries as text compiled on first use (src/cli/lazy.ts).
    const bundle = fileURLToPath(new URL('../../release/pcctl.mjs', import.meta.url))
    // A child process, not execFileSync: the server answering it runs in this process.
    const run = async (args: string[]) => (await execFileAsync(process.execPath, [bundle, ...args], { env: { PATH: process.env.PATH, HOME: dir, ...env }, encoding: 'utf8' })).stdout
    assert.equal(await run(['server', 'list', '--long']), (await pcctl(['server', 'list', '--long'])).stdout)
    const yaml = await run(['flavor', 'show', 'm1.tiny', '-f', 'yaml', '-c', 'name', '-c', 'ram'])
    assert.equal(yaml, 'name: m1.tiny\nram: 512\n')
  })

  it('lists the flags of each command in --help', async () => {
    const expected: [string[], string[]][] = [
      [['server', 'create'], ['--image', '--flavor', '--nic', '--network', '--key-name', '--property', '--security-group', '--availability-zone', '--user-data', '--wait']],
      [['server', 'delete'], ['--wait', '--force']],
      [['server', 'reboot'], ['--hard', '--soft', '--wait']],
      [['server', 'resize'], ['--flavor', '--wait']],
      [['flavor', 'create'], ['--ram', '--disk', '--vcpus', '--ephemeral', '--swap', '--public', '--private', '--id']],
      [['image', 'create'], ['--file', '--disk-format', '--container-format', '--public', '--private']],
      [['volume', 'create'], ['--size', '--image', '--type', '--availability-zone', '--bootable']],
      [['image', 'list'], ['--long']],
      [['hypervisor', 'list'], ['--long']],
    ]
    for (const [words, flags] of expected) {
      const r = await pcctl([...words, '--help'])
      assert.equal(r.code, 0)
      for (const flag of flags) assert.ok(r.stdout.includes(` ${flag} `) || r.stdout.includes(` ${flag}\n`), `${words.join(' ')} --help lists ${flag}`)
    }
  })
})
