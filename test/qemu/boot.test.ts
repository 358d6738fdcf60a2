/**
 * Real guests through the public API: an agent host with the QEMU driver, a server booted from the default image
 * with a key pair, metadata and user data, and the guest's own lines read back with Debian's `openstack console
 * log show` and os-getConsoleOutput. os-hypervisors says what the host is.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { until } from '../../src/testkit/compute-api.js'
import { defaultImageName } from '../../src/server/image/default-image.js'
import { adminEnv, openstack } from '../../src/testkit/openstack.js'
import { qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'
import { startQemuCloud, type QemuCloud } from '../../src/testkit/qemu-cloud.js'

const missing = realGuestsMissing()
const PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPccGuestImageTestKey0123456789abcdefghijk test@pcc'

describe('real guests through the API', { skip: missing }, () => {
  let cloud: QemuCloud
  before(async () => {
    cloud = await startQemuCloud({ hosts: 1 })
  })
  after(async () => {
    await cloud?.close()
  })

  const settled = (id: string, ms = 180_000) =>
    until(`server ${id} to settle`, ms, async () => {
      const s = await cloud.api.server(id)
      return s && s.status !== 'BUILD' && s['OS-EXT-STS:task_state'] === null ? s : undefined
    }, 250)

  it('lists the host in os-hypervisors as QEMU, saying KVM or TCG and its real address', async () => {
    const r = await cloud.api.at('2.28').call('GET', '/os-hypervisors/detail')
    const [hyp] = r.body.hypervisors
    assert.equal(hyp.hypervisor_hostname, 'qemu-host-0')
    assert.equal(hyp.hypervisor_type, 'QEMU')
    assert.ok(hyp.hypervisor_version >= 7_000_000)
    assert.ok(['kvm', 'tcg'].includes(hyp.cpu_info.accelerator), JSON.stringify(hyp.cpu_info))
    assert.match(hyp.cpu_info.accelerator_reason, /./)
    assert.match(String(hyp.host_ip), /^\d+\.\d+\.\d+\.\d+$/)
  })

  it("boots the default image; the guest prints its name, key, metadata and user data from the config drive, and runs the user data's script", async () => {
    assert.equal((await cloud.api.call('POST', '/os-keypairs', { keypair: { name: 'k1', public_key: PUBLIC_KEY } })).status, 201)
    const image = (await cloud.api.other('GET', `/image/v2/images?name=${defaultImageName()}`)).body.images[0].id as string
    const userData = '#!/bin/sh\necho "pcc-guest: hello from the user data of $(hostname)"\necho written > /mnt/disk/files/note\nsync\n'
    const { id } = await cloud.api.create({
      name: 'guest-one', imageRef: image, flavorRef: '1', networks: 'none', key_name: 'k1', metadata: { role: 'web' },
      user_data: Buffer.from(userData).toString('base64'),
    })
    const server = await settled(id)
    assert.equal(server.status, 'ACTIVE', JSON.stringify(server.fault))
    assert.equal(server['OS-EXT-SRV-ATTR:host'], 'qemu-host-0')

    // The guest's own words, through the real client.
    const env = adminEnv(cloud.server)
    const log = await until('the guest to run its user data', 120_000, async () => {
      const r = await openstack(['console', 'log', 'show', id], env)
      return /pcc-guest: user-data exit 0/.test(r.stdout) ? r.stdout : undefined
    }, 1000)
    for (const line of [
      /pcc-guest: boot 1\n/, /pcc-guest: config-drive \/dev\/sr0/, `pcc-guest: uuid ${id}`, 'pcc-guest: name guest-one', 'pcc-guest: hostname guest-one.novalocal',
      `pcc-guest: key k1 ${PUBLIC_KEY}`, 'pcc-guest: meta role=web', 'pcc-guest: user-data: #!/bin/sh', 'pcc-guest: hello from the user data of guest-one',
      /pcc-guest: admin-pass sha256:[0-9a-f]{16}/,
    ]) assert.match(log, typeof line === 'string' ? new RegExp(line.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')) : line)
    assert.doesNotMatch(log, /\r/, 'control characters other than newlines and tabs are stripped, as Nova does')

    // os-getConsoleOutput with a length gives the last lines only.
    const whole = (await cloud.api.action(id, 'os-getConsoleOutput', {})).body.output as string
    const tail = await cloud.api.action(id, 'os-getConsoleOutput', { length: 3 })
    assert.equal(tail.status, 200)
    const lines = (tail.body.output as string).replace(/\n$/, '').split('\n')
    assert.equal(lines.length, 3)
    assert.ok(whole.replace(/\n$/, '').endsWith(lines.join('\n')), 'the last three lines of the log')
  })

  it('deleting the server leaves nothing on the host: no QEMU, no files, no sockets', async () => {
    const [server] = await cloud.api.servers()
    assert.equal((await cloud.api.call('DELETE', `/servers/${server.id}`)).status, 204)
    await until('the server gone', 60_000, async () => ((await cloud.api.server(server.id)) === undefined ? true : undefined), 250)
    assert.deepEqual(qemuLeftovers(cloud.hosts[0].root, server.id), [])
  })
})
