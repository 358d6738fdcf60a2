/**
 * Every list filter and sort key against a seeded set of servers, comparing the returned ids with the ids
 * the filter's semantics select (docs/compute.md, "Listing"), on both dialects.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { DIALECTS } from '../../src/testkit/harness.js'
import type { ServerTable } from '../../src/server/storage/schema.js'
import { call, computeTestbed, type ComputeTestbed, type Persona } from './helpers.js'

const HOUR = 3600_000
// Recent enough that the purge job (7-day retention) never takes the deleted seed while the test runs.
const T0 = Math.floor((Date.now() - 2 * 86_400_000) / HOUR) * HOUR
/** A time as the regex filters on timestamps match it: `YYYY-MM-DD HH:MM:SS`. */
const stamp = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19)

interface Seed {
  name: string
  project: 'a' | 'b'
  vm?: string
  task?: string | null
  power?: number
  tags?: string[]
  key?: string | null
  az?: string | null
  locked?: boolean
  host?: string | null
  flavor?: string
  image?: string
  deleted?: boolean
  progress?: number
  hostname?: string
  user?: 'member' | 'other'
  description?: string | null
  configDrive?: boolean
}

const IMG1 = '11111111-1111-4111-8111-111111111111'
const IMG2 = '22222222-2222-4222-8222-222222222222'

const SEEDS: Seed[] = [
  { name: 'alpha', project: 'a', tags: ['a', 'b'], key: 'k1', az: 'az1', host: 'h1', flavor: '1', image: IMG1, hostname: 'alpha', progress: 100 },
  { name: 'alpha2', project: 'a', tags: ['a'], key: 'k2', az: 'az2', host: 'h2', flavor: '2', image: IMG1, locked: true, hostname: 'alpha-two' },
  { name: 'beta', project: 'a', vm: 'stopped', power: 4, tags: ['b'], az: 'az1', host: 'h1', flavor: '1', image: IMG2, configDrive: true },
  { name: 'gamma', project: 'a', vm: 'active', task: 'rebooting', tags: [], key: 'k1', host: 'h2', flavor: '3', image: IMG2, description: 'the gamma one' },
  { name: 'delta', project: 'a', vm: 'building', task: 'scheduling', power: 0, host: null, az: null, flavor: '1', image: IMG1 },
  { name: 'epsilon', project: 'a', vm: 'error', power: 0, tags: ['c'], host: 'h1', flavor: '2', image: IMG1 },
  { name: 'zeta-gone', project: 'a', vm: 'deleted', deleted: true, host: null, flavor: '1', image: IMG1 },
  { name: 'eta-soft', project: 'a', vm: 'soft-delete', power: 4, host: 'h1', flavor: '1', image: IMG1 },
  { name: 'theta', project: 'b', tags: ['a'], host: 'h2', flavor: '1', image: IMG1, user: 'other' },
  { name: 'iota', project: 'b', vm: 'paused', power: 3, host: 'h1', flavor: '2', image: IMG2, user: 'other' },
]

async function seed(tb: ComputeTestbed): Promise<Map<string, ServerTable>> {
  const byName = new Map<string, ServerTable>()
  const rows: ServerTable[] = SEEDS.map((s, i) => {
    const owner: Persona = s.project === 'a' ? tb.member : tb.other
    const flavor = { id: s.flavor ?? '1', name: `f${s.flavor}`, vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} }
    const row: ServerTable = {
      id: randomUUID(), rev: 0, display_id: 1000 + i, name: s.name, description: s.description ?? null, project_id: owner.projectId, user_id: s.user === 'other' ? tb.other.userId : tb.member.userId,
      host_id: null, host: s.host === undefined ? 'h1' : s.host, node: s.host ?? null, vm_state: s.vm ?? 'active', task_state: s.task ?? null, power_state: s.power ?? 1,
      flavor: JSON.stringify(flavor), old_flavor: null, new_flavor: null, image_id: s.image ?? IMG1, key_name: s.key ?? null, key_data: null, metadata: '{}',
      // Columns that only sort get values in an order unlike the names' and creation order, so each sort key shows.
      access_ip_v4: `10.0.${i % 3}.${20 - i}`, access_ip_v6: i % 4 === 0 ? '' : `fd00::${(15 - i).toString(16)}`, availability_zone: s.az === undefined ? 'az1' : s.az,
      pinned_availability_zone: null, config_drive: s.configDrive ? 1 : 0, disk_config: i % 2 ? 'AUTO' : 'MANUAL', user_data: null, hostname: s.hostname ?? s.name,
      locked: s.locked ? 1 : 0, locked_by: s.locked ? 'owner' : null, locked_reason: null, launch_index: (i * 7) % 4,
      reservation_id: i < 2 ? 'r-aaaa0001' : `r-bbbb00${i.toString().padStart(2, '0')}`, root_device_name: ['/dev/vda', '/dev/sda', null][i % 3],
      kernel_id: i % 2 ? `kernel-${(i * 3) % 5}` : null, ramdisk_id: i % 3 ? `ramdisk-${9 - i}` : null,
      progress: s.progress ?? 0, trusted_image_certificates: null, scheduler_hints: null, security_groups: '[]', requested_networks: '"none"', block_devices: '[]',
      created_at: T0 + i * HOUR, updated_at: T0 + i * HOUR + 60_000, launched_at: s.vm === 'building' ? null : T0 + i * HOUR + 30_000,
      terminated_at: s.deleted ? T0 + i * HOUR + 50_000 : null, deleted_at: s.deleted ? T0 + i * HOUR + 50_000 : null, deleted: s.deleted ? 1 : 0,
    }
    byName.set(s.name, row)
    return row
  })
  const db = tb.server.deps.store.db
  await db.insertInto('servers').values(rows).execute()
  const tags = SEEDS.flatMap((s) => (s.tags ?? []).map((tag) => ({ server_id: byName.get(s.name)!.id, tag })))
  if (tags.length) await db.insertInto('server_tags').values(tags).execute()
  return byName
}

/**
 * What each sort key orders by, written from Nova's column names (docs/compute.md, "Listing"), with NULL as the smallest
 * value, as both dialects order it here.
 */
const SORTED_BY: Record<string, (r: ServerTable) => string | number | null> = {
  access_ip_v4: (r) => r.access_ip_v4,
  access_ip_v6: (r) => r.access_ip_v6,
  auto_disk_config: (r) => r.disk_config,
  availability_zone: (r) => r.availability_zone,
  config_drive: (r) => r.config_drive,
  created_at: (r) => r.created_at,
  display_description: (r) => r.description,
  display_name: (r) => r.name,
  hostname: (r) => r.hostname,
  image_ref: (r) => r.image_id,
  instance_type_id: (r) => r.flavor,
  kernel_id: (r) => r.kernel_id,
  key_name: (r) => r.key_name,
  launch_index: (r) => r.launch_index,
  launched_at: (r) => r.launched_at,
  locked: (r) => r.locked,
  locked_by: (r) => r.locked_by,
  node: (r) => r.node,
  power_state: (r) => r.power_state,
  progress: (r) => r.progress,
  project_id: (r) => r.project_id,
  ramdisk_id: (r) => r.ramdisk_id,
  root_device_name: (r) => r.root_device_name,
  task_state: (r) => r.task_state,
  terminated_at: (r) => r.terminated_at,
  updated_at: (r) => r.updated_at,
  user_id: (r) => r.user_id,
  uuid: (r) => r.id,
  vm_state: (r) => r.vm_state,
}
delete SORTED_BY.node // admin only: checked separately

/** Names in the order one sort key gives, ties broken by created_at and then id in the key's direction. */
function expectedOrder(servers: ServerTable[], key: string, dir: 'asc' | 'desc'): string[] {
  const value = key === 'node' ? (r: ServerTable) => r.node : SORTED_BY[key]
  const compare = (x: string | number | null, y: string | number | null) => (x === y ? 0 : x === null || x === '' ? (y === null || y === '' ? 0 : -1) : y === null || y === '' ? 1 : x < y ? -1 : 1)
  const sign = dir === 'asc' ? 1 : -1
  return [...servers]
    .sort((a, b) => sign * (compare(value(a), value(b)) || compare(a.created_at, b.created_at) || compare(a.id, b.id)))
    .map((r) => r.name)
}

/** Calls the network API (Neutron) as `who`; the request must succeed. */
async function neutron(tb: ComputeTestbed, who: Persona, path: string, body: unknown): Promise<Record<string, { id: string }>> {
  const res = await fetch(`${tb.server.url}/network${path}`, { method: 'POST', headers: { 'x-auth-token': who.token, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const parsed = (await res.json()) as Record<string, { id: string }>
  assert.equal(res.status, 201, JSON.stringify(parsed))
  return parsed
}

/**
 * Known fixed addresses on the seeded servers, through the network service as a create would give them:
 * project a: alpha 10.0.0.10 and fd00:1::a, alpha2 10.0.0.1, gamma 10.0.0.100; project b (its own network,
 * the same address space): theta 10.0.0.1.
 */
async function seedAddresses(tb: ComputeTestbed, rows: Map<string, ServerTable>): Promise<void> {
  const network = async (who: Persona, name: string, cidr: string, version: 4 | 6) => {
    const { network: net } = await neutron(tb, who, '/v2.0/networks', { network: { name } })
    await neutron(tb, who, '/v2.0/subnets', { subnet: { network_id: net.id, ip_version: version, cidr } })
    return net.id
  }
  const lanA = await network(tb.member, 'lan', '10.0.0.0/24', 4)
  const lanA6 = await network(tb.member, 'lan6', 'fd00:1::/64', 6)
  const lanB = await network(tb.other, 'lan', '10.0.0.0/24', 4)
  const give = (name: string, projectId: string, request: { uuid: string; fixed_ip: string }[]) =>
    tb.server.deps.store.db.transaction().execute((tx) => tb.server.deps.network.allocateServerPorts(tx, { projectId, serverId: rows.get(name)!.id, request }))
  await give('alpha', tb.member.projectId, [{ uuid: lanA, fixed_ip: '10.0.0.10' }, { uuid: lanA6, fixed_ip: 'fd00:1::a' }])
  await give('alpha2', tb.member.projectId, [{ uuid: lanA, fixed_ip: '10.0.0.1' }])
  await give('gamma', tb.member.projectId, [{ uuid: lanA, fixed_ip: '10.0.0.100' }])
  await give('theta', tb.other.projectId, [{ uuid: lanB, fixed_ip: '10.0.0.1' }])
}

for (const dialect of DIALECTS) {
  test(`list filters and sort keys select the right servers (${dialect})`, async () => {
    const tb = await computeTestbed(dialect)
    try {
      const rows = await seed(tb)
      await seedAddresses(tb, rows)
      const names = (ids: string[]) => ids.map((id) => [...rows.values()].find((r) => r.id === id)?.name ?? id)
      const list = async (who: Persona, query: string, version = '2.96') => {
        const r = await call(tb, who, 'GET', `/servers/detail${query ? `?${query}` : ''}`, undefined, version)
        return { status: r.status, names: r.status === 200 ? names(r.body.servers.map((s: { id: string }) => s.id)) : [], body: r.body }
      }
      const expectNames = async (who: Persona, query: string, expected: string[], version = '2.96') => {
        const r = await list(who, query, version)
        assert.equal(r.status, 200, `${query} @${version}: ${JSON.stringify(r.body)}`)
        assert.deepEqual(r.names, expected, `${query} @${version}`)
      }
      const expectStatus = async (who: Persona, query: string, status: number, version = '2.96') => {
        const r = await list(who, query, version)
        assert.equal(r.status, status, `${query} @${version}`)
      }
      const m = tb.member
      const a = tb.admin
      // Newest first by default; deleted and soft-deleted hidden; another project's servers hidden.
      const live = ['epsilon', 'delta', 'gamma', 'beta', 'alpha2', 'alpha']
      await expectNames(m, '', live)
      await expectNames(m, 'deleted=False', live)
      await expectNames(m, 'project_id=' + tb.other.projectId, live)
      await expectNames(m, 'name=alpha', ['alpha2', 'alpha'])
      await expectNames(m, 'name=^alpha$', ['alpha'])
      await expectNames(m, 'name=a$', ['delta', 'gamma', 'beta', 'alpha'])
      await expectNames(m, 'status=ACTIVE', ['gamma', 'alpha2', 'alpha'])
      await expectNames(m, 'status=active', ['gamma', 'alpha2', 'alpha'])
      await expectNames(m, 'status=REBOOT', ['gamma'])
      await expectNames(m, 'status=SHUTOFF&status=ERROR', ['epsilon', 'beta'])
      await expectNames(m, 'status=BUILD', ['delta'])
      await expectStatus(m, 'status=BOGUS', 400)
      await expectNames(m, 'status=BOGUS', [], '2.37')
      await expectStatus(m, 'status=DELETED', 403)
      await expectNames(m, 'image=' + IMG2, ['gamma', 'beta'])
      await expectNames(m, 'flavor=2', ['epsilon', 'alpha2'])
      await expectNames(m, 'flavor=999', [])
      await expectNames(m, 'reservation_id=r-aaaa0001', ['alpha2', 'alpha'])
      // ip / ip6: Nova's regular expressions over fixed addresses, anchored at the start, within the caller's project.
      await expectNames(m, 'ip=10.0.0.1', ['gamma', 'alpha2', 'alpha'])
      await expectNames(m, 'ip=' + encodeURIComponent('10\\.0\\.0\\.1$'), ['alpha2'])
      await expectNames(m, 'ip=' + encodeURIComponent('10.0.0.1[0-9]+'), ['gamma', 'alpha'])
      await expectNames(m, 'ip=0.0.1', [])
      await expectNames(m, 'ip=10.0.0.7', [])
      await expectNames(m, 'ip=fd00', [], '2.5')
      await expectNames(m, 'ip6=fd00:1::a', ['alpha'], '2.5')
      await expectNames(m, 'ip6=fd00:1::a', live, '2.4')
      await expectNames(m, 'ip=10.0.0.1&ip6=fd00', ['alpha'])
      await expectNames(m, 'ip=10.0.0.1&name=gamma', ['gamma'])
      await expectNames(m, 'ip=10.0.0.1&limit=2', ['gamma', 'alpha2'])
      await expectStatus(m, 'ip=10.0.0.(', 400)
      await expectNames(a, 'all_tenants=1&ip=10.0.0.1$', ['theta', 'alpha2'])
      const summary = await call(tb, m, 'GET', '/servers?ip=10.0.0.10', undefined, '2.96')
      assert.deepEqual(names(summary.body.servers.map((s: { id: string }) => s.id)), ['gamma', 'alpha'], 'the summary list filters as well')
      await expectNames(m, `changes-since=${new Date(T0 + 5 * HOUR).toISOString()}`, ['eta-soft', 'zeta-gone', 'epsilon'])
      await expectNames(m, `changes-since=${new Date(T0 + 4 * HOUR).toISOString()}&changes-before=${new Date(T0 + 6 * HOUR).toISOString()}`, ['epsilon', 'delta'])
      await expectStatus(m, 'changes-since=yesterday', 400)
      await expectStatus(m, `changes-since=${new Date(T0 + 6 * HOUR).toISOString()}&changes-before=${new Date(T0).toISOString()}`, 400)
      // Tags (2.26).
      await expectNames(m, 'tags=a,b', ['alpha'])
      await expectNames(m, 'tags-any=a,c', ['epsilon', 'alpha2', 'alpha'])
      await expectNames(m, 'not-tags=a,b', ['epsilon', 'delta', 'gamma', 'beta', 'alpha2'])
      await expectNames(m, 'not-tags-any=a,c', ['delta', 'gamma', 'beta'])
      await expectNames(m, 'tags=a,b', live, '2.25')
      // A thousand tags in one filter, repeated or distinct (issue 18: a condition per tag made SQLite refuse the query as too deep, a 500).
      const thousand = (tag: (i: number) => string) => Array.from({ length: 1000 }, (_, i) => tag(i)).join(',')
      await expectNames(m, `tags=${thousand(() => 'a')}`, ['alpha2', 'alpha'])
      await expectNames(m, `tags=${thousand((i) => (i < 2 ? ['a', 'b'][i] : `x${i}`))}`, [])
      await expectNames(m, `tags-any=${thousand((i) => (i === 999 ? 'c' : `x${i}`))}`, ['epsilon'])
      await expectNames(m, `not-tags=${thousand((i) => `x${i}`)}`, live)
      await expectNames(m, `not-tags-any=${thousand(() => 'a')}`, ['epsilon', 'delta', 'gamma', 'beta'])
      // 2.73 locked, 2.83 filters, 2.90 hostname; ignored below for members.
      await expectNames(m, 'locked=true', ['alpha2'])
      await expectNames(m, 'locked=0', ['epsilon', 'delta', 'gamma', 'beta', 'alpha'])
      await expectStatus(m, 'locked=maybe', 400)
      await expectNames(m, 'locked=true', live, '2.72')
      await expectNames(m, 'availability_zone=az1', ['epsilon', 'gamma', 'beta', 'alpha'])
      await expectNames(m, 'availability_zone=az1', live, '2.82')
      await expectNames(m, 'key_name=k1', ['gamma', 'alpha'])
      await expectNames(m, 'config_drive=true', ['beta'])
      await expectNames(m, 'vm_state=stopped', ['beta'])
      await expectNames(m, 'vm_state=active&vm_state=error', ['epsilon', 'gamma', 'alpha2', 'alpha'])
      await expectNames(m, 'task_state=rebooting', ['gamma'])
      await expectNames(m, 'power_state=4', ['beta'])
      await expectNames(m, 'progress=100', ['alpha'])
      await expectNames(m, 'user_id=' + tb.member.userId, live)
      await expectNames(m, `created_at=${stamp(T0 + HOUR).slice(0, 13)}`, ['alpha2'])
      await expectNames(m, `launched_at=${stamp(T0 + 2 * HOUR + 30_000)}`, ['beta'])
      // Only deleted servers have been terminated: members never see them, admins asking for deleted ones do.
      await expectNames(m, `terminated_at=${stamp(T0 + 6 * HOUR + 50_000)}`, [])
      await expectNames(a, `all_tenants=1&deleted=true&terminated_at=${stamp(T0 + 6 * HOUR + 50_000)}`, ['zeta-gone'])
      await expectNames(m, 'hostname=two', ['alpha2'])
      await expectNames(m, 'hostname=two', live, '2.89')
      // Admin-only filters: ignored for members, honoured for admins.
      await expectStatus(m, 'all_tenants=1', 403)
      await expectNames(m, 'host=h2', live)
      await expectNames(a, 'all_tenants=1', ['iota', 'theta', ...live])
      await expectNames(a, 'all_tenants', ['iota', 'theta', ...live])
      await expectNames(a, 'all_tenants=1&project_id=' + tb.other.projectId, ['iota', 'theta'])
      await expectNames(a, 'all_tenants=1&tenant_id=' + tb.other.projectId, ['iota', 'theta'])
      await expectStatus(a, 'all_tenants=banana', 400)
      await expectNames(a, 'all_tenants=1&host=h2', ['theta', 'gamma', 'alpha2'])
      await expectNames(a, 'all_tenants=1&node=h', ['iota', 'theta', 'epsilon', 'gamma', 'beta', 'alpha2', 'alpha'])
      await expectNames(a, 'all_tenants=1&deleted=true', ['eta-soft', 'zeta-gone'])
      await expectNames(a, 'all_tenants=1&status=DELETED', ['zeta-gone'])
      await expectNames(a, 'all_tenants=1&description=gamma', ['gamma'])
      await expectNames(a, 'all_tenants=1&uuid=' + rows.get('beta')!.id, ['beta'])
      await expectNames(a, 'all_tenants=1&user_id=' + tb.other.userId, ['iota', 'theta'])
      await expectStatus(a, 'all_tenants=1&metadata=x', 400)
      await expectStatus(a, 'all_tenants=1&_secret=x', 400)
      // Unknown parameters: ignored below 2.75, 400 from it.
      await expectNames(m, 'bogus=1', live, '2.74')
      await expectStatus(m, 'bogus=1', 400, '2.75')
      // Sorting.
      await expectNames(m, 'sort_key=display_name&sort_dir=asc', ['alpha', 'alpha2', 'beta', 'delta', 'epsilon', 'gamma'])
      await expectNames(m, 'sort_key=display_name', ['gamma', 'epsilon', 'delta', 'beta', 'alpha2', 'alpha'])
      await expectNames(m, 'sort_key=created_at&sort_dir=asc', [...live].reverse())
      await expectNames(m, 'sort_key=vm_state&sort_dir=asc&sort_key=display_name&sort_dir=desc', ['gamma', 'alpha2', 'alpha', 'delta', 'epsilon', 'beta'])
      await expectNames(m, 'sort_key=key_name&sort_dir=asc&sort_key=display_name&sort_dir=asc', ['beta', 'delta', 'epsilon', 'alpha', 'gamma', 'alpha2'])
      await expectNames(m, 'sort_key=availability_zone&sort_key=display_name&sort_dir=asc&sort_dir=asc', ['delta', 'alpha', 'beta', 'epsilon', 'gamma', 'alpha2'])
      await expectNames(m, 'sort_key=power_state&sort_dir=desc', ['beta', 'gamma', 'alpha2', 'alpha', 'epsilon', 'delta'])
      await expectNames(m, 'sort_key=locked&sort_dir=desc', ['alpha2', 'epsilon', 'delta', 'gamma', 'beta', 'alpha'])
      await expectStatus(m, 'sort_key=host', 403)
      await expectNames(a, `all_tenants=1&project_id=${tb.member.projectId}&sort_key=host&sort_dir=asc`, ['delta', 'alpha', 'beta', 'epsilon', 'alpha2', 'gamma'])
      for (const dir of ['asc', 'desc'] as const) {
        const everyone = [...rows.values()].filter((r) => !r.deleted && r.vm_state !== 'soft-delete')
        await expectNames(a, `all_tenants=1&sort_key=node&sort_dir=${dir}`, expectedOrder(everyone, 'node', dir))
      }
      await expectStatus(m, 'sort_key=bogus', 400)
      await expectStatus(m, 'sort_key=display_name&sort_dir=sideways', 400)
      await expectNames(m, 'sort_key=vcpus', live, '2.74')
      await expectStatus(m, 'sort_key=vcpus', 400, '2.75')
      for (const key of Object.keys(SORTED_BY)) {
        for (const dir of ['asc', 'desc'] as const) {
          const r = await list(m, `sort_key=${key}&sort_dir=${dir}`)
          assert.equal(r.status, 200, key)
          assert.deepEqual(r.names, expectedOrder(live.map((n) => rows.get(n)!), key, dir), `sort_key=${key}&sort_dir=${dir}`)
          // Paging through the same order one by one gives the same sequence.
          const paged: string[] = []
          let marker = ''
          for (let i = 0; i < live.length + 1; i++) {
            const page = await list(m, `sort_key=${key}&sort_dir=${dir}&limit=1${marker}`)
            if (page.names.length === 0) break
            paged.push(...page.names)
            marker = `&marker=${[...rows.values()].find((x) => x.name === page.names[0])!.id}`
          }
          assert.deepEqual(paged, r.names, `paging by ${key} ${dir}`)
        }
      }
    } finally {
      await tb.close()
    }
  })
}

test('limit, marker and servers_links', async () => {
  const tb = await computeTestbed()
  try {
    const rows = await seed(tb)
    const first = await call(tb, tb.member, 'GET', '/servers?limit=4&name=a', undefined, '2.96')
    assert.equal(first.status, 200)
    assert.equal(first.body.servers.length, 4)
    const next = new URL(first.body.servers_links[0].href)
    assert.equal(next.searchParams.get('name'), 'a', 'the next link carries the filters')
    assert.equal(next.searchParams.get('marker'), first.body.servers[3].id)
    assert.ok(next.href.startsWith(tb.server.deps.urls.compute + '/servers?'), 'absolute, on the public compute URL')
    const second = await call(tb, tb.member, 'GET', `/servers${next.search}`, undefined, '2.96')
    assert.deepEqual(second.body.servers.map((s: { name: string }) => s.name), ['alpha'])
    assert.ok(!('servers_links' in second.body))
    const bad = await call(tb, tb.member, 'GET', `/servers?marker=${randomUUID()}`)
    assert.equal(bad.status, 400)
    assert.match(bad.body.badRequest.message, /marker \[.*\] not found/)
    assert.equal((await call(tb, tb.member, 'GET', '/servers?limit=-1')).status, 400)
    assert.equal((await call(tb, tb.member, 'GET', '/servers?limit=abc')).status, 400)
    assert.deepEqual((await call(tb, tb.member, 'GET', '/servers?limit=0')).body.servers, [])
    // A deleted server is accepted as marker.
    const afterDeleted = await call(tb, tb.member, 'GET', `/servers?marker=${rows.get('zeta-gone')!.id}`)
    assert.deepEqual(afterDeleted.body.servers.map((s: { name: string }) => s.name), ['epsilon', 'delta', 'gamma', 'beta', 'alpha2', 'alpha'])
  } finally {
    await tb.close()
  }
})

test('the page size cap is a setting (PCC_COMPUTE_MAX_LIMIT)', async () => {
  const tb = await computeTestbed('sqlite', { PCC_COMPUTE_MAX_LIMIT: '4' })
  try {
    await seed(tb)
    const page = await call(tb, tb.member, 'GET', '/servers?limit=50')
    assert.equal(page.body.servers.length, 4)
    assert.ok(page.body.servers_links[0].href.includes('limit=50'))
    const all = await call(tb, tb.member, 'GET', '/servers')
    assert.equal(all.body.servers.length, 4)
  } finally {
    await tb.close()
  }
})
