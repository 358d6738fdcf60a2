/**
 * The real `openstack` client (python3-openstackclient) with host aggregates and availability zones: aggregate
 * create/set/add host/show/list/remove host/delete, availability zone list, hypervisor show (which reads the
 * aggregates), a server placed with --availability-zone, and its resize in server migration list.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'

type Row = Record<string, unknown>

test('openstack aggregate, availability zone list, hypervisor show, server create --availability-zone, server migration list', { timeout: 600_000 }, async () => {
  const server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '3' } })
  const env = { ...adminEnv(server), OS_COMPUTE_API_VERSION: '2.latest' }
  const os = (args: string[]) => openstackJson<Row>(args, env)
  const osList = (args: string[]) => openstackJson<Row[]>(args, env)
  const ok = async (args: string[]) => {
    const r = await openstack(args, env, 120_000)
    assert.equal(r.code, 0, `openstack ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  try {
    const created = await os(['aggregate', 'create', '--zone', 'edge', 'edge-rack'])
    assert.equal(created.availability_zone, 'edge')
    await ok(['aggregate', 'add', 'host', 'edge-rack', 'sim-host-3'])
    await ok(['aggregate', 'set', '--property', 'disk=ssd', 'edge-rack'])
    const shown = await os(['aggregate', 'show', 'edge-rack'])
    assert.deepEqual(shown.hosts, ['sim-host-3'])
    assert.match(JSON.stringify(shown.properties), /disk.*ssd/)
    const listed = await osList(['aggregate', 'list', '--long'])
    assert.equal(listed.find((a) => a.Name === 'edge-rack')?.['Availability Zone'], 'edge')

    const zones = await osList(['availability', 'zone', 'list', '--compute'])
    assert.deepEqual(zones.map((z) => z['Zone Name']).sort(), ['edge', 'nova'])
    const hypervisor = await os(['hypervisor', 'show', 'sim-host-3'])
    assert.deepEqual(hypervisor.aggregates, ['edge-rack'])

    const images = await osList(['image', 'list'])
    const imageId = String(images[0].ID)
    const srv = JSON.parse(await ok(['server', 'create', '--image', imageId, '--flavor', 'm1.tiny', '--nic', 'none', '--availability-zone', 'edge', '--wait', '-f', 'json', 'in-edge'])) as Row
    assert.equal(srv['OS-EXT-SRV-ATTR:host'], 'sim-host-3')
    assert.equal(srv['OS-EXT-AZ:availability_zone'], 'edge')
    await ok(['server', 'resize', '--flavor', 'm1.small', '--wait', 'in-edge'])
    const migrations = await osList(['server', 'migration', 'list', '--server', 'in-edge'])
    assert.equal(migrations.length, 1)
    assert.equal(migrations[0].Status, 'finished')
    assert.equal(migrations[0].Type, 'resize')
    await ok(['server', 'delete', '--wait', 'in-edge'])

    await ok(['aggregate', 'unset', '--property', 'disk', 'edge-rack'])
    await ok(['aggregate', 'remove', 'host', 'edge-rack', 'sim-host-3'])
    await ok(['aggregate', 'delete', 'edge-rack'])
    assert.equal((await osList(['aggregate', 'list'])).length, 0)
  } finally {
    await server.close()
  }
})
