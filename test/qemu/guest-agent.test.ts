/**
 * The QEMU guest agent (image property hw_qemu_guest_agent=yes) through the compute API and the `openstack` client,
 * with the guest's own console as the evidence: `openstack server set --password` changes the password of the
 * image's login user inside the guest (its new hash is the password's), a snapshot of an image with
 * os_require_quiesce freezes and thaws the guest's file systems (the agent's hook prints both), and a stop is the
 * guest shutting itself down when the agent asks. Without the agent, a snapshot that requires quiescing fails with
 * Nova's reason and the server stays as it was. A server booted from a volume made of the image is quiesced around
 * the volume snapshots of its createImage (the API asks its host: quiesceGuest, unquiesceGuest).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { ExportManager } from '../../src/host/storage/exports/export-manager.js'
import { until } from '../../src/testkit/compute-api.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { adminEnv, openstack } from '../../src/testkit/openstack.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'
import { acts, b64, consoleLog, NANO, rests, sees } from './helpers.js'

const missing = realGuestsMissing()

/** User data: prints the login user's password hash (pcc, the default image's os_admin_user) whenever it changes. */
const HASH_WATCHER = [
  '#!/bin/sh',
  'hash() { awk -F: -v u="$1" \'$1 == u { print $2 }\' /etc/passwd; }',
  'last=$(hash pcc); root=$(hash root)',
  'echo "pcc-test: watching" "hashes"',
  'while sleep 0.5; do',
  '  now=$(hash pcc)',
  '  [ "$now" != "$last" ] && echo "pcc-test: pcc-hash $now root-unchanged $([ "$(hash root)" = "$root" ] && echo yes || echo no)" && last=$now',
  'done',
  '',
].join('\n')

describe('the QEMU guest agent through the compute API and the openstack client', { skip: missing, timeout: 1_200_000 }, () => {
  let cloud: QemuCloud
  let env: Record<string, string>
  let image: string
  let plain: string
  let agent: string
  const cli = async (args: string[]) => {
    const r = await openstack(args, env, 120_000)
    assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }

  before(async () => {
    // Volume exports (NBD) on ports of this test's own.
    cloud = await startQemuCloud({ hosts: 1, env: { PCC_VOLUME_EXPORT_PORTS: '23810-23819' } })
    env = adminEnv(cloud.server)
    image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id
    // The first server's image requires quiescing but has no agent; once it runs, the image gets the agent too.
    await cli(['image', 'set', '--property', 'os_require_quiesce=yes', image])
    ;({ id: plain } = await cloud.api.create({ name: 'no-agent', imageRef: image, flavorRef: NANO, networks: 'none' }))
    await rests(cloud.api, plain, 'ACTIVE')
    await cli(['image', 'set', '--property', 'hw_qemu_guest_agent=yes', image])
    ;({ id: agent } = await cloud.api.create({ name: 'agent', imageRef: image, flavorRef: NANO, networks: 'none', user_data: b64(HASH_WATCHER) }))
    await rests(cloud.api, agent, 'ACTIVE')
  })
  after(async () => {
    if (cloud) await new ExportManager(join(cloud.server.dataDir, 'run', 'volumes')).stopAll()
    await cloud?.close()
  })

  it('without the agent, a snapshot that requires quiescing fails with the reason and the server stays ACTIVE', async () => {
    assert.match(await sees(cloud.api, plain, /pcc-guest: ready/), /pcc-guest: guest-agent none/)
    const r = await acts(cloud.api, plain, 'createImage', { name: 'quiesced' }, 202)
    await until('the action finished', 120_000, async () => ((await cloud.api.instanceAction(plain, r.requestId)).events?.[0]?.finish_time ? true : undefined), 500)
    await rests(cloud.api, plain, 'ACTIVE')
    const action = await cloud.api.instanceAction(plain, r.requestId)
    assert.equal(action.message, 'Error')
    assert.match(JSON.stringify(action.events), /Quiescing requires the QEMU guest agent/)
    const images = (await cloud.api.other('GET', '/image/v2/images?name=quiesced')).body.images as { status: string }[]
    assert.ok(images.every((i) => i.status !== 'active'), 'no image of an unquiesced guest')
  })

  it('openstack server set --password sets the login user\'s password inside the guest', async () => {
    const booted = await sees(cloud.api, agent, /pcc-test: watching hashes/, 180_000)
    assert.match(booted, /pcc-guest: guest-agent \/dev\/vport\d+p1/)
    const password = 'Gu3st-agent pass'
    await cli(['server', 'set', '--password', password, agent])
    const text = await sees(cloud.api, agent, /pcc-test: pcc-hash \$6\$\S+ root-unchanged \w+/, 60_000)
    const [, hash, rootUnchanged] = /pcc-test: pcc-hash (\$6\$\S+) root-unchanged (\w+)/.exec(text)!
    assert.equal(execFileSync('openssl', ['passwd', '-6', '-salt', hash.split('$')[2], '-stdin'], { input: password }).toString().trim(), hash, 'the hash is the new password\'s')
    assert.equal(rootUnchanged, 'yes', 'the image\'s os_admin_user (pcc) got it, not root')
    await rests(cloud.api, agent, 'ACTIVE')
    assert.ok(!(await consoleLog(cloud.api, agent)).includes(password), 'the password is on no console')
  })

  it('snapshots with the guest\'s file systems frozen, then thawed', async () => {
    const out = await cli(['server', 'image', 'create', '--name', 'agent-snap', '--wait', '-f', 'json', agent])
    assert.equal((JSON.parse(out) as { status: string }).status, 'active')
    const text = await sees(cloud.api, agent, /pcc-guest: fsfreeze thaw/, 30_000)
    assert.match(text, /pcc-guest: fsfreeze freeze\r?\n[\s\S]*pcc-guest: fsfreeze thaw/)
    await rests(cloud.api, agent, 'ACTIVE')
  })

  it('quiesces a volume-backed server around the volume snapshots of its createImage', async () => {
    const { id } = await cloud.api.create({
      name: 'agent-volume', flavorRef: NANO, networks: 'none',
      block_device_mapping_v2: [{ source_type: 'image', uuid: image, destination_type: 'volume', boot_index: 0, volume_size: 1, delete_on_termination: true }],
    })
    await rests(cloud.api, id, 'ACTIVE')
    // The guest runs with its volume's image's hardware: the agent's channel is there.
    assert.match(await sees(cloud.api, id, /pcc-guest: ready/, 180_000), /pcc-guest: guest-agent \/dev\/vport\d+p1/)
    const r = await acts(cloud.api, id, 'createImage', { name: 'agent-volume-snap' }, 202)
    // The API answers once the guest is thawed: both lines are on its console by then.
    const text = await sees(cloud.api, id, /pcc-guest: fsfreeze thaw/, 10_000)
    assert.match(text, /pcc-guest: fsfreeze freeze\r?\n[\s\S]*pcc-guest: fsfreeze thaw/)
    const made = (await cloud.api.other('GET', `/image/v2/images/${r.body.image_id as string}`)).body as { status: string; block_device_mapping: string }
    assert.equal(made.status, 'active')
    assert.equal((JSON.parse(made.block_device_mapping) as { source_type: string }[])[0].source_type, 'snapshot')
    await rests(cloud.api, id, 'ACTIVE')
    assert.equal((await cloud.api.call('DELETE', `/servers/${id}`)).status, 204)
    await until(`server ${id} gone`, 120_000, async () => ((await cloud.api.server(id)) ? undefined : true), 500)
  })

  it('stops cleanly through the agent: the guest shuts itself down', async () => {
    await acts(cloud.api, agent, 'os-stop', null, 202)
    await rests(cloud.api, agent, 'SHUTOFF')
    const text = await consoleLog(cloud.api, agent)
    assert.match(text, /pcc-guest: guest agent shutdown: powering off/)
    assert.doesNotMatch(text, /pcc-guest: power button/)
  })
})
