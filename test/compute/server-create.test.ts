/** POST /servers: accepted requests, every field's bad input (400 naming the field, nothing created), quotas, policy. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { IMAGE, call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'
import { COMPUTE_TASK_KINDS } from '../../src/server/compute/tasks.js'

async function countServers(tb: ComputeTestbed): Promise<number> {
  const r = await tb.server.deps.store.db.selectFrom('servers').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(r.n)
}

test('create: 202, Location, adminPass, BUILD/scheduling, instance action and build task in one go', async () => {
  const tb = await computeTestbed()
  try {
    const r = await call(tb, tb.member, 'POST', '/servers', createBody('web-1', { metadata: { role: 'web' }, tags: ['x'], description: 'd' }), '2.96')
    assert.equal(r.status, 202)
    const id = r.body.server.id
    assert.equal(r.headers.get('location'), `${tb.server.deps.urls.compute}/servers/${id}`)
    assert.deepEqual(Object.keys(r.body.server).sort(), ['OS-DCF:diskConfig', 'adminPass', 'id', 'links', 'security_groups'])
    assert.match(r.body.server.adminPass, /^[2-9A-HJ-NP-Za-km-z]{12}$/)
    const show = (await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
    assert.equal(show.status, 'BUILD')
    assert.equal(show['OS-EXT-STS:task_state'], 'scheduling')
    assert.deepEqual(show.metadata, { role: 'web' })
    assert.deepEqual(show.tags, ['x'])
    assert.equal(show.description, 'd')
    const db = tb.server.deps.store.db
    const action = await db.selectFrom('instance_actions').selectAll().where('server_id', '=', id).executeTakeFirstOrThrow()
    assert.equal(action.action, 'create')
    assert.equal(action.request_id, r.headers.get('x-compute-request-id'))
    const task = await db.selectFrom('tasks' as never).selectAll().where('kind' as never, '=', COMPUTE_TASK_KINDS.build as never).executeTakeFirst()
    assert.ok(task, 'a compute.build task was enqueued')
    assert.deepEqual(JSON.parse((task as { payload: string }).payload).serverIds, [id])

    // Below 2.19 the description is the name; flavorRef as URL; networks [] at 2.1.
    const old = await call(tb, tb.member, 'POST', '/servers', { server: { name: 'old', imageRef: IMAGE, flavorRef: `${tb.compute}/flavors/2`, networks: [], min_count: 1, max_count: 1 } })
    assert.equal(old.status, 202)
    const oldShow = (await call(tb, tb.member, 'GET', `/servers/${old.body.server.id}`, undefined, '2.19')).body.server
    assert.equal(oldShow.description, 'old')
    assert.equal(oldShow.flavor.original_name, undefined)
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${old.body.server.id}`, undefined, '2.47')).body.server.flavor.original_name, 'm1.small')
  } finally {
    await tb.close()
  }
})

test('multiple create and return_reservation_id', async () => {
  const tb = await computeTestbed()
  try {
    const r = await call(tb, tb.member, 'POST', '/servers', createBody('many', { min_count: 2, max_count: 3 }), '2.37')
    assert.equal(r.status, 202)
    const list = (await call(tb, tb.member, 'GET', '/servers?sort_key=display_name&sort_dir=asc')).body.servers.map((s: { name: string }) => s.name)
    assert.deepEqual(list, ['many-1', 'many-2', 'many-3'])
    const res = await call(tb, tb.member, 'POST', '/servers', createBody('rsv', { return_reservation_id: true }), '2.37')
    assert.equal(res.status, 202)
    assert.match(res.body.reservation_id, /^r-[0-9a-z]{8}$/)
    assert.equal(res.headers.get('location'), null)
    const byRsv = await call(tb, tb.member, 'GET', `/servers?reservation_id=${res.body.reservation_id}`)
    assert.equal(byRsv.body.servers.length, 1)
    // Quota: 10 instances by default; 4 exist, so min_count 7 is refused with 403 and nothing is created.
    const over = await call(tb, tb.member, 'POST', '/servers', createBody('over', { min_count: 7 }), '2.37')
    assert.equal(over.status, 403)
    assert.match(over.body.forbidden.message, /Quota exceeded for instances/)
    // max_count above what fits creates as many as fit.
    const fit = await call(tb, tb.member, 'POST', '/servers', createBody('fit', { max_count: 20 }), '2.37')
    assert.equal(fit.status, 202)
    assert.equal((await call(tb, tb.member, 'GET', '/servers')).body.servers.length, 10)
  } finally {
    await tb.close()
  }
})

test('bad input for every create field: 400 naming the field, nothing created', async () => {
  const tb = await computeTestbed()
  try {
    const before = await countServers(tb)
    const base = (server: Record<string, unknown>) => ({ server: { name: 'x', imageRef: IMAGE, flavorRef: '1', networks: 'none', ...server } })
    const cases: [string, unknown, string, string?][] = [
      ['missing name', { server: { imageRef: IMAGE, flavorRef: '1', networks: 'none' } }, 'name'],
      ['name too long', base({ name: 'n'.repeat(256) }), 'name'],
      ['name with leading space', base({ name: ' x' }), 'name'],
      ['name not a string', base({ name: 5 }), 'name'],
      ['missing flavorRef', { server: { name: 'x', imageRef: IMAGE, networks: 'none' } }, 'flavorRef'],
      ['unknown flavor', base({ flavorRef: '999' }), 'Flavor 999'],
      ['imageRef not a uuid', base({ imageRef: 'cirros' }), 'imageRef'],
      ['no image and no bdm', base({ imageRef: '' }), 'Missing imageRef'],
      ['networks missing at 2.37', { server: { name: 'x', imageRef: IMAGE, flavorRef: '1' } }, 'networks'],
      ['networks bad word', base({ networks: 'some' }), 'networks'],
      ['network uuid not uuid', base({ networks: [{ uuid: 'abc' }] }), 'uuid'],
      ['fixed_ip not an ip', base({ networks: [{ uuid: IMAGE, fixed_ip: '1.2.3' }] }), 'fixed_ip'],
      ['metadata key bad', base({ metadata: { 'bad/key': 'v' } }), 'metadata'],
      ['metadata value too long', base({ metadata: { k: 'v'.repeat(256) } }), 'k'],
      ['metadata value not string', base({ metadata: { k: 1 } }), 'k'],
      ['user_data not base64', base({ user_data: 'not base64!' }), 'user_data'],
      ['user_data too long', base({ user_data: 'QUFB'.repeat(16384) }), 'user_data'],
      ['accessIPv4 bad', base({ accessIPv4: '300.1.1.1' }), 'accessIPv4'],
      ['accessIPv6 bad', base({ accessIPv6: 'zz' }), 'accessIPv6'],
      ['diskConfig bad', base({ 'OS-DCF:diskConfig': 'SOMETIMES' }), 'OS-DCF:diskConfig'],
      ['config_drive bad', base({ config_drive: 'maybe' }), 'config_drive'],
      ['min_count zero', base({ min_count: 0 }), 'min_count'],
      ['max_count not int', base({ max_count: 'many' }), 'max_count'],
      ['min over max', base({ min_count: 3, max_count: 2 }), 'min_count'],
      ['key_name unknown', base({ key_name: 'nokey' }), 'key_name'],
      ['security group not an object', base({ security_groups: ['default'] }), '0'],
      ['both bdm syntaxes', base({ block_device_mapping: [{}], block_device_mapping_v2: [{ boot_index: 0, source_type: 'image', uuid: IMAGE, destination_type: 'local' }] }), 'block_device_mapping'],
      ['bdm bad source_type', base({ block_device_mapping_v2: [{ source_type: 'tape', uuid: IMAGE }] }), 'source_type'],
      ['bdm volume_size zero', base({ block_device_mapping_v2: [{ source_type: 'blank', destination_type: 'volume', volume_size: 0, boot_index: 1 }] }), 'volume_size'],
      ['bdm blank with uuid', base({ block_device_mapping_v2: [{ source_type: 'blank', uuid: IMAGE, destination_type: 'local', boot_index: 1 }] }), 'Invalid device UUID'],
      ['bdm volume without uuid', base({ block_device_mapping_v2: [{ source_type: 'volume', destination_type: 'volume', boot_index: 1 }] }), 'Missing device UUID'],
      ['bdm boot index gap', base({ block_device_mapping_v2: [{ source_type: 'volume', uuid: IMAGE, destination_type: 'volume', boot_index: 0 }, { source_type: 'volume', uuid: IMAGE, destination_type: 'volume', boot_index: 2 }] }), 'Boot sequence'],
      ['bdm unknown key', base({ block_device_mapping_v2: [{ source_type: 'blank', destination_type: 'local', boot_index: 1, colour: 'red' }] }), 'colour'],
      ['tags too many', base({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 'tags'],
      ['tag with slash', base({ tags: ['a/b'] }), '0'],
      ['trusted certs too many', base({ trusted_image_certificates: Array.from({ length: 51 }, (_, i) => `c${i}`) }), 'trusted_image_certificates'],
      ['trusted certs duplicate', base({ trusted_image_certificates: ['a', 'a'] }), 'trusted_image_certificates'],
      ['description too long', base({ description: 'd'.repeat(256) }), 'description'],
      ['hostname bad', base({ hostname: 'bad host!' }), 'hostname'],
      ['hostname with several', base({ hostname: 'h', max_count: 2 }), 'hostname'],
      ['unknown key', base({ colour: 'red' }), 'colour'],
      ['personality after 2.56', base({ personality: [{ path: '/etc/x', contents: 'QQ==' }] }), 'personality'],
      ['bad availability zone', base({ availability_zone: 'nowhere' }), 'availability zone'],
      ['too many colons in az', base({ availability_zone: 'a:b:c:d' }), 'availability zone'],
      ['scheduler hint group not uuid', { ...base({}), 'os:scheduler_hints': { group: 'g' } }, 'group'],
      ['scheduler hint group unknown', { ...base({}), 'os:scheduler_hints': { group: IMAGE } }, 'Group'],
      ['body not an object', [1, 2], 'body'],
      ['unknown top-level key', { ...base({}), extra: 1 }, 'extra'],
    ]
    for (const [what, body, field] of cases) {
      const r = await call(tb, tb.member, 'POST', '/servers', body, '2.96')
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`)
      assert.ok(r.body.badRequest, what)
      if (field !== 'body') assert.ok(r.body.badRequest.message.includes(field), `${what}: message names ${field}: ${r.body.badRequest.message}`)
    }
    // Version-gated fields are additional properties before their version.
    const gated: [string, Record<string, unknown>, string][] = [
      ['description', { description: 'd' }, '2.18'],
      ['tags', { tags: ['a'] }, '2.51'],
      ['trusted_image_certificates', { trusted_image_certificates: ['a'] }, '2.62'],
      ['host', { host: 'h' }, '2.73'],
      ['hostname', { hostname: 'h1' }, '2.89'],
    ]
    for (const [field, extra, version] of gated) {
      const r = await call(tb, tb.admin, 'POST', '/servers', { server: { name: 'x', imageRef: IMAGE, flavorRef: '1', networks: 'none', ...extra } }, version)
      assert.equal(r.status, 400, `${field} @${version}`)
      assert.match(r.body.badRequest.message, new RegExp(field))
    }
    // personality is fine until 2.56 (path ≤ 255).
    const personality = await call(tb, tb.member, 'POST', '/servers', base({ personality: [{ path: 'p'.repeat(256), contents: 'QQ==' }] }), '2.56')
    assert.equal(personality.status, 400)
    assert.match(personality.body.badRequest.message, /path/)
    assert.equal(await countServers(tb), before, 'nothing was created')
  } finally {
    await tb.close()
  }
})

test('create policy: forced hosts and requested destinations are for admins; metadata quota is 403', async () => {
  const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '0' })
  try {
    const db = tb.server.deps.store.db
    await db.insertInto('hosts').values({ id: 'h-1', hostname: 'sim-1', kind: 'simulated', driver: 'simulated', availability_zone: 'nova', cell: 'cell1', ip_addresses: '[]', facts: '{}', vcpus: 8, memory_mb: 16384, disk_gb: 100, cpu_allocation_ratio: 4, ram_allocation_ratio: 1, disk_allocation_ratio: 1, vcpus_used: 0, memory_mb_used: 0, disk_gb_used: 0, running_vms: 0, service_status: 'enabled', disabled_reason: null, forced_down: 0, last_heartbeat_at: Date.now(), created_at: Date.now(), updated_at: Date.now() }).execute()
    const forced = await call(tb, tb.member, 'POST', '/servers', createBody('f', { availability_zone: 'nova:sim-1' }), '2.96')
    assert.equal(forced.status, 403)
    const dest = await call(tb, tb.member, 'POST', '/servers', createBody('f', { host: 'sim-1' }), '2.96')
    assert.equal(dest.status, 403)
    const adminForced = await call(tb, tb.admin, 'POST', '/servers', createBody('f', { availability_zone: 'nova:sim-1' }), '2.96')
    assert.equal(adminForced.status, 202)
    const both = await call(tb, tb.admin, 'POST', '/servers', createBody('f', { availability_zone: 'nova:sim-1', host: 'sim-1' }), '2.96')
    assert.equal(both.status, 400)
    const unknownHost = await call(tb, tb.admin, 'POST', '/servers', createBody('f', { host: 'nope' }), '2.96')
    assert.equal(unknownHost.status, 400)
    const meta = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, 'v']))
    const tooMany = await call(tb, tb.member, 'POST', '/servers', createBody('m', { metadata: meta }), '2.96')
    assert.equal(tooMany.status, 403)
    assert.match(tooMany.body.forbidden.message, /metadata_items/)
    const reader = await call(tb, tb.reader, 'POST', '/servers', createBody('r'), '2.96')
    assert.equal(reader.status, 403, 'readers cannot create')
  } finally {
    await tb.close()
  }
})

for (const dialect of ['sqlite', 'postgres'] as const) {
  test(`concurrent creates all succeed with distinct instance names (${dialect})`, async () => {
    const tb = await computeTestbed(dialect)
    try {
      await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { instances: -1, cores: -1, ram: -1 } })
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => call(tb, tb.member, 'POST', '/servers', createBody(`c${i}`), '2.96')))
      assert.deepEqual(results.map((r) => r.status), Array(16).fill(202))
      const detail = await call(tb, tb.admin, 'GET', `/servers/detail?all_tenants=1&project_id=${tb.member.projectId}`, undefined, '2.96')
      const names = new Set(detail.body.servers.map((s: Record<string, string>) => s['OS-EXT-SRV-ATTR:instance_name']))
      assert.equal(names.size, 16)
    } finally {
      await tb.close()
    }
  })
}

test('cores, ram, key pair and server group quotas: 403 with Nova\'s message, nothing created', async () => {
  const tb = await computeTestbed()
  try {
    const count = async (path: string, key: string) => (await call(tb, tb.member, 'GET', path)).body[key].length
    // Flavor 2 (m1.small) has 1 vCPU and 2048 MiB: two fit in 3 cores and 5000 MiB, a third does not.
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { instances: -1, cores: 3, ram: 5000 } })).status, 200)
    assert.equal((await call(tb, tb.member, 'POST', '/servers', createBody('q', { flavorRef: '2', min_count: 2 }), '2.37')).status, 202)
    const ram = await call(tb, tb.member, 'POST', '/servers', createBody('q-ram', { flavorRef: '2' }), '2.37')
    assert.equal(ram.status, 403)
    assert.match(ram.body.forbidden.message, /^Quota exceeded for ram: Requested 2048, but already used 4096 of 5000 ram/)
    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { cores: 2, ram: -1 } })).status, 200)
    const cores = await call(tb, tb.member, 'POST', '/servers', createBody('q-cores', { flavorRef: '2' }), '2.37')
    assert.equal(cores.status, 403)
    assert.match(cores.body.forbidden.message, /^Quota exceeded for cores: Requested 1, but already used 2 of 2 cores/)
    assert.equal(await count('/servers', 'servers'), 2, 'no server created by the refused requests')

    assert.equal((await call(tb, tb.admin, 'PUT', `/os-quota-sets/${tb.member.projectId}`, { quota_set: { key_pairs: 1, server_groups: 1 } })).status, 200)
    assert.equal((await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'k1' } })).status, 200)
    const keys = await call(tb, tb.member, 'POST', '/os-keypairs', { keypair: { name: 'k2' } })
    assert.equal(keys.status, 403)
    assert.match(keys.body.forbidden.message, /Quota exceeded, too many key pairs/)
    assert.equal(await count('/os-keypairs', 'keypairs'), 1)
    assert.equal((await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g1', policies: ['anti-affinity'] } })).status, 200)
    const groups = await call(tb, tb.member, 'POST', '/os-server-groups', { server_group: { name: 'g2', policies: ['affinity'] } })
    assert.equal(groups.status, 403)
    assert.match(groups.body.forbidden.message, /Quota exceeded, too many server groups/)
    assert.equal(await count('/os-server-groups', 'server_groups'), 1)
  } finally {
    await tb.close()
  }
})

test('create: image hardware properties outside what the hypervisors honour, and impossible CPU topologies, are 400 with nothing created; img_config_drive=mandatory forces a config drive', async () => {
  const tb = await computeTestbed()
  try {
    const db = tb.server.deps.store.db
    const base = JSON.parse((await db.selectFrom('images').select('properties').where('id', '=', IMAGE).executeTakeFirstOrThrow()).properties) as Record<string, string>
    const withProperties = (props: Record<string, string>) => db.updateTable('images').set({ properties: JSON.stringify({ ...base, ...props }) }).where('id', '=', IMAGE).execute()
    await call(tb, tb.admin, 'POST', '/flavors/3/os-extra_specs', { extra_specs: { 'hw:cpu_sockets': '1' } })
    const before = await countServers(tb)
    for (const [props, flavorRef, message] of [
      [{ hw_rng_model: 'egd' }, '1', /hw_rng_model=egd is not supported.*virtio/],
      [{ hw_video_model: 'matrox' }, '1', /hw_video_model=matrox/],
      [{ hw_scsi_model: 'lsilogic' }, '1', /hw_scsi_model=lsilogic.*virtio-scsi/],
      [{ os_type: 'plan9' }, '1', /os_type=plan9/],
      [{ img_config_drive: 'always' }, '1', /img_config_drive=always/],
      [{ hw_firmware_type: 'coreboot' }, '1', /hw_firmware_type=coreboot.*bios, uefi/],
      [{ hw_cpu_cores: 'two' }, '1', /hw_cpu_cores=two is not a positive integer/],
      [{ hw_cpu_sockets: '2', hw_cpu_cores: '2' }, '1', /cannot give the flavor's 1 vCPUs/],
      // m1.medium (2 vCPUs): its hw:cpu_sockets=1 is the most an image may ask for.
      [{ hw_cpu_sockets: '2' }, '3', /exceeds the flavor's limit hw:cpu_sockets=1/],
    ] as const) {
      await withProperties(props)
      const r = await call(tb, tb.member, 'POST', '/servers', createBody('hw', { flavorRef }), '2.37')
      assert.equal(r.status, 400, `${JSON.stringify(props)}: ${JSON.stringify(r.body)}`)
      assert.match(r.body.badRequest.message, message)
    }
    assert.equal(await countServers(tb), before, 'nothing created')

    await withProperties({ img_config_drive: 'mandatory', hw_rng_model: 'virtio', hw_video_model: 'none', os_type: 'linux' })
    const ok = await call(tb, tb.member, 'POST', '/servers', createBody('drive'), '2.37')
    assert.equal(ok.status, 202, JSON.stringify(ok.body))
    const shown = (await call(tb, tb.member, 'GET', `/servers/${ok.body.server.id}`)).body.server
    assert.equal(shown.config_drive, 'True', 'the image forces a config drive though the request asked for none')
  } finally {
    await tb.close()
  }
})
