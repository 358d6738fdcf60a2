/**
 * End to end with the real `openstack` client (python3-openstackclient) against a fresh server with three
 * simulated hosts: the server lifecycle, flavors and key pairs, at the client's default microversion and at the
 * highest it can speak. Debian's openstackclient 6.0 (novaclient 18.1) refuses `--os-compute-api-version 2.96`
 * before sending anything ("versions supported by client: 2.1 - 2.92"); `2.latest` is its way to ask for the
 * newest, which it turns into 2.92. 2.93–2.96 are covered over REST by the other compute tests.
 * Needs identity's POST /auth/tokens, the conductor and the image service (merged separately).
 *
 * In CI the default microversion runs the whole lifecycle; 2.latest runs what a microversion changes on the wire
 * (create without networks, tags, the server and flavor documents, lock, live migration, rebuild, snapshot, the
 * action log, key pairs the client makes itself) and leaves out what it would only repeat: the second server and the
 * list filters, and the power and move actions whose requests and answers no microversion changes (reboot, stop,
 * start, pause, suspend, shelve, resize, cold migration). The whole lifecycle at 2.latest runs with
 * PCC_FULL_TESTS=1 (`npm run test:full -- compute/openstack-cli`): each `openstack` command costs the client's
 * Python start-up and each `--wait` its 5-second polls, minutes in all on a busy CI machine.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'

type Row = Record<string, unknown>

const FULL = process.env.PCC_FULL_TESTS === '1'
/** `whole`: every step; otherwise the steps whose requests or answers depend on the microversion (above). */
const variants: { version?: string; whole: boolean }[] = [{ whole: true }, { version: '2.latest', whole: FULL }]

for (const { version, whole } of variants) {
  const title = `openstack server lifecycle, flavors and key pairs (compute ${version ?? 'default'}${whole ? '' : ', what the microversion changes'})`
  test(title, { timeout: 600_000 }, async () => {
    const server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '3' } })
    // The image file the test uploads; removed with the server.
    const dir = mkdtempSync(join(tmpdir(), 'pcc-e2e-'))
    const env = { ...adminEnv(server), ...(version ? { OS_COMPUTE_API_VERSION: version } : {}) }
    const os = (args: string[]) => openstackJson<Row>(args, env)
    const osList = (args: string[]) => openstackJson<Row[]>(args, env)
    const ok = async (args: string[]) => {
      const r = await openstack(args, env, 120_000)
      assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr}`)
      return r.stdout
    }
    // `--wait` prints `Progress: N` while it polls whenever the server's progress is not 0; Nova keeps it 0 (only a
    // live migration moves it), so scripts get the -f json document alone, and the other commands only `Complete`.
    const quietWait = async (args: string[]) => {
      const out = await ok(args)
      assert.doesNotMatch(out, /Progress/, `openstack ${args.join(' ')} printed progress: ${JSON.stringify(out)}`)
      return out
    }
    const osWait = async (args: string[]) => JSON.parse(await quietWait([...args, '-f', 'json'])) as Row
    // novaclient refuses `--nic none` below 2.37; there the request carries no networks at all.
    const nic = version ? ['--nic', 'none'] : []
    const waitFor = async (name: string, status: string) => {
      const deadline = Date.now() + 90_000
      let last = ''
      while (Date.now() < deadline) {
        last = String((await os(['server', 'show', name])).status)
        if (last === status) return
        if (last === 'ERROR') break
        await new Promise((r) => setTimeout(r, 500))
      }
      assert.fail(`${name} did not reach ${status} (last ${last})`)
    }
    try {
      // Flavors.
      const flavors = await osList(['flavor', 'list'])
      assert.ok(flavors.some((f) => f.Name === 'm1.tiny'))
      assert.equal((await os(['flavor', 'show', 'm1.tiny'])).ram, 512)
      const created = await os(['flavor', 'create', '--ram', '256', '--disk', '1', '--vcpus', '1', 'e2e.flavor'])
      assert.equal(created.name, 'e2e.flavor')
      assert.ok((await osList(['flavor', 'list'])).some((f) => f.Name === 'e2e.flavor'))

      // Key pairs.
      // Without --public-key the client prints the private key (PEM), not the -f table.
      assert.match(await ok(['keypair', 'create', 'e2e-key']), /PRIVATE KEY/)
      assert.ok((await osList(['keypair', 'list'])).some((k) => k.Name === 'e2e-key'))

      // An image to boot from.
      writeFileSync(join(dir, 'disk.img'), Buffer.alloc(4096, 1))
      const image = await os(['image', 'create', '--disk-format', 'qcow2', '--container-format', 'bare', '--file', join(dir, 'disk.img'), 'e2e-image'])
      const imageId = String(image.id)

      // Create and wait.
      const srv = await osWait(['server', 'create', '--image', imageId, '--flavor', 'm1.tiny', ...nic, '--key-name', 'e2e-key', '--wait', 'e2e-1'])
      assert.equal(srv.status, 'ACTIVE')
      const id = String(srv.id)
      const servers = whole ? ['e2e-1', 'e2e-2'] : ['e2e-1']
      if (whole) await osWait(['server', 'create', '--image', imageId, '--flavor', 'm1.tiny', ...nic, '--wait', 'e2e-2'])

      // Lists.
      const plain = await osList(['server', 'list'])
      assert.deepEqual(plain.map((s) => s.Name).sort(), servers)
      const long = await osList(['server', 'list', '--long'])
      assert.ok('Power State' in long[0] && 'Task State' in long[0])
      if (whole) {
        assert.deepEqual((await osList(['server', 'list', '--name', 'e2e-1'])).map((s) => s.ID), [id])
        assert.equal((await osList(['server', 'list', '--status', 'ACTIVE'])).length, 2)
        const first = await osList(['server', 'list', '--limit', '1'])
        assert.equal(first.length, 1)
        const rest = await osList(['server', 'list', '--marker', String(first[0].ID)])
        assert.equal(rest.length, 1)
        assert.notEqual(rest[0].ID, first[0].ID)
      }

      // Show and set.
      const shown = await os(['server', 'show', 'e2e-1'])
      assert.equal(shown.id, id)
      assert.equal(shown.key_name, 'e2e-key')
      await ok(['server', 'set', '--name', 'e2e-1b', '--property', 'role=web', ...(version ? ['--tag', 'blue'] : []), 'e2e-1'])
      const renamed = await os(['server', 'show', id])
      assert.equal(renamed.name, 'e2e-1b')
      assert.match(JSON.stringify(renamed.properties), /role/)
      if (version) assert.match(JSON.stringify(renamed.tags), /blue/)

      // Actions.
      if (whole) {
        await quietWait(['server', 'reboot', '--wait', id])
        await waitFor(id, 'ACTIVE')
        await ok(['server', 'stop', id])
        await waitFor(id, 'SHUTOFF')
        await ok(['server', 'start', id])
        await waitFor(id, 'ACTIVE')
        await ok(['server', 'pause', id])
        await waitFor(id, 'PAUSED')
        await ok(['server', 'unpause', id])
        await waitFor(id, 'ACTIVE')
        await ok(['server', 'suspend', id])
        await waitFor(id, 'SUSPENDED')
        await ok(['server', 'resume', id])
        await waitFor(id, 'ACTIVE')
      }
      await ok(['server', 'lock', id])
      assert.equal(String((await os(['server', 'show', id])).locked ?? 'True').toLowerCase(), 'true')
      await ok(['server', 'unlock', id])
      if (whole) {
        await quietWait(['server', 'shelve', '--wait', id])
        await waitFor(id, 'SHELVED_OFFLOADED')
        await quietWait(['server', 'unshelve', '--wait', id])
        await waitFor(id, 'ACTIVE')
        await quietWait(['server', 'resize', '--flavor', 'm1.small', '--wait', id])
        await waitFor(id, 'VERIFY_RESIZE')
        await ok(['server', 'resize', 'confirm', id])
        await waitFor(id, 'ACTIVE')
        assert.match(JSON.stringify((await os(['server', 'show', id])).flavor), /m1.small/)
        await quietWait(['server', 'migrate', '--wait', id])
        await waitFor(id, 'VERIFY_RESIZE')
        await ok(['server', 'resize', 'confirm', id])
        await waitFor(id, 'ACTIVE')
      }
      await quietWait(['server', 'migrate', '--live-migration', '--wait', id])
      await waitFor(id, 'ACTIVE')
      await quietWait(['server', 'rebuild', '--image', imageId, '--wait', id])
      await waitFor(id, 'ACTIVE')
      await ok(['server', 'image', 'create', '--name', 'e2e-snap', id])
      await waitFor(id, 'ACTIVE')
      const events = await osList(['server', 'event', 'list', id])
      const actions = events.map((e) => e.Action)
      const expected = whole ? ['create', 'reboot', 'stop', 'start', 'resize', 'rebuild', 'createImage'] : ['create', 'live-migration', 'rebuild', 'createImage']
      for (const a of expected) assert.ok(actions.includes(a), `event ${a} in ${actions.join(',')}`)

      // Delete.
      await quietWait(['server', 'delete', '--wait', id])
      assert.equal((await openstack(['server', 'show', id], env)).code !== 0, true)
      if (whole) await quietWait(['server', 'delete', '--wait', 'e2e-2'])
      assert.deepEqual(await osList(['server', 'list']), [])
      await ok(['keypair', 'delete', 'e2e-key'])
      assert.ok(!(await osList(['keypair', 'list'])).some((k) => k.Name === 'e2e-key'))
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
}
