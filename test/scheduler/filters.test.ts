import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { filterHosts, inCidr } from '../../src/server/scheduler/filters.js'
import type { HostState } from '../../src/server/scheduler/host-state.js'
import { hostPassesQuery, JsonQueryError, parseJsonQuery } from '../../src/server/scheduler/json-filter.js'
import type { RequestSpec } from '../../src/server/scheduler/request-spec.js'
import { parseAvailabilityZone } from '../../src/server/scheduler/request-spec.js'
import { weighHosts } from '../../src/server/scheduler/weighers.js'

function host(name: string, over: Partial<HostState> = {}): HostState {
  return {
    id: `id-${name}`, hostname: name, availabilityZone: 'nova', cell: 'cell1', ips: ['10.0.0.1'],
    vcpus: 8, memoryMb: 8192, diskGb: 100, cpuRatio: 1, ramRatio: 1, diskRatio: 1,
    vcpusUsed: 0, memoryMbUsed: 0, diskGbUsed: 0, runningVms: 0, up: true, enabled: true, hypervisor: true, hypervisorType: 'QEMU', aggregateMetadata: {}, facts: '{}',
    ...over,
  }
}

function spec(over: Partial<RequestSpec> = {}): RequestSpec {
  return {
    serverId: 's', projectId: 'p', resources: { vcpus: 1, memoryMb: 512, diskGb: 1 }, extraSpecs: {}, availabilityZone: null, forcedHost: null, forcedNode: null,
    hints: {}, group: null, instanceHosts: new Map(), ignoreHosts: new Set(), imagesType: null, ...over,
  }
}

const names = (hs: HostState[]) => hs.map((h) => h.hostname).sort()

describe('scheduler filters', () => {
  it('AggregateInstanceExtraSpecsFilter keeps hosts whose aggregates carry every scoped extra spec', () => {
    const hosts = [host('ssd', { aggregateMetadata: { disk: ['ssd'], rack: ['r1', 'r2'] } }), host('hdd', { aggregateMetadata: { disk: ['hdd'] } }), host('none')]
    const scoped = (specs: Record<string, string>) => spec({ extraSpecs: specs })
    assert.deepEqual(names(filterHosts(hosts, scoped({ 'aggregate_instance_extra_specs:disk': 'ssd' })).hosts), ['ssd'])
    assert.deepEqual(names(filterHosts(hosts, scoped({ 'aggregate_instance_extra_specs:disk': 'ssd', 'aggregate_instance_extra_specs:rack': 'r2' })).hosts), ['ssd'])
    const none = filterHosts(hosts, scoped({ 'aggregate_instance_extra_specs:disk': 'nvme' }))
    assert.deepEqual(none.hosts, [])
    assert.equal(none.emptiedBy, 'AggregateInstanceExtraSpecsFilter')
    // Unscoped and other scopes are not the filter's: every host stays.
    assert.deepEqual(names(filterHosts(hosts, scoped({ disk: 'nvme', 'hw:cpu_policy': 'dedicated' })).hosts), ['hdd', 'none', 'ssd'])
  })

  it('AvailabilityZoneFilter uses the zone the host state carries (its aggregate\'s or its own)', () => {
    const hosts = [host('a', { availabilityZone: 'az1' }), host('b')]
    assert.deepEqual(names(filterHosts(hosts, spec({ availabilityZone: 'az1' })).hosts), ['a'])
    assert.deepEqual(names(filterHosts(hosts, spec({ availabilityZone: 'nova' })).hosts), ['b'])
  })

  it('keep only hosts that are up, enabled and carry the hypervisor role in state ok', () => {
    const hosts = [host('a'), host('down', { up: false }), host('disabled', { enabled: false }), host('norole', { hypervisor: false })]
    assert.deepEqual(names(filterHosts(hosts, spec()).hosts), ['a'])
    const none = filterHosts([host('down', { up: false })], spec())
    assert.equal(none.emptiedBy, 'ComputeFilter')
  })

  it("send a move only to hosts that keep disks as its source does (its disks in Ceph are opened where they are)", () => {
    const rbd = (name: string) => host(name, { facts: JSON.stringify({ images_type: 'rbd' }) })
    const hosts = [rbd('a'), host('files', { facts: JSON.stringify({ images_type: 'qcow2' }) }), host('silent'), rbd('b')]
    assert.deepEqual(names(filterHosts(hosts, spec({ imagesType: 'rbd' })).hosts), ['a', 'b'])
    assert.deepEqual(names(filterHosts(hosts, spec({ imagesType: 'qcow2' })).hosts), ['files'])
    assert.equal(filterHosts([host('files')], spec({ imagesType: 'rbd' })).emptiedBy, 'ImagesTypeFilter')
    assert.equal(filterHosts(hosts, spec()).hosts.length, 4, 'a new server goes anywhere')
  })

  it('honour the availability zone and the zone:host:node forms', () => {
    const hosts = [host('a'), host('b', { availabilityZone: 'az2' }), host('c', { availabilityZone: 'az2' })]
    assert.deepEqual(names(filterHosts(hosts, spec({ availabilityZone: 'az2' })).hosts), ['b', 'c'])
    const forced = parseAvailabilityZone('az2:c')
    assert.deepEqual(forced, { zone: 'az2', host: 'c', node: null })
    assert.deepEqual(names(filterHosts(hosts, spec({ availabilityZone: forced.zone, forcedHost: forced.host })).hosts), ['c'])
    const node = parseAvailabilityZone('az2::b')
    assert.deepEqual(node, { zone: 'az2', host: null, node: 'b' })
    assert.deepEqual(names(filterHosts(hosts, spec({ availabilityZone: node.zone, forcedNode: node.node })).hosts), ['b'])
    assert.deepEqual(parseAvailabilityZone('az2:b:b'), { zone: 'az2', host: 'b', node: 'b' })
    assert.equal(filterHosts(hosts, spec({ availabilityZone: 'nova', forcedHost: 'b' })).emptiedBy, 'ForcedHostFilter')
  })

  it('count RAM, vCPUs and disk with the allocation ratios', () => {
    const r = { vcpus: 4, memoryMb: 4096, diskGb: 50 }
    assert.deepEqual(names(filterHosts([host('full', { vcpusUsed: 5 }), host('ok', { vcpusUsed: 4 })], spec({ resources: r })).hosts), ['ok'])
    assert.deepEqual(names(filterHosts([host('over', { vcpusUsed: 5, cpuRatio: 2 })], spec({ resources: r })).hosts), ['over'], 'cpu ratio 2 doubles vCPUs')
    assert.deepEqual(names(filterHosts([host('ram', { memoryMbUsed: 4097 }), host('ram15', { memoryMbUsed: 4097, ramRatio: 1.5 })], spec({ resources: r })).hosts), ['ram15'])
    assert.deepEqual(names(filterHosts([host('disk', { diskGbUsed: 51 }), host('disk2', { diskGbUsed: 51, diskRatio: 2 })], spec({ resources: r })).hosts), ['disk2'])
  })

  it('apply server-group affinity and anti-affinity (with max_server_per_host)', () => {
    const hosts = [host('a'), host('b'), host('c')]
    const group = (policy: 'affinity' | 'anti-affinity', on: Record<string, number>, max = 1) => ({ id: 'g', policy, maxPerHost: max, hosts: new Map(Object.entries(on)) })
    assert.deepEqual(names(filterHosts(hosts, spec({ group: group('affinity', {}) })).hosts), ['a', 'b', 'c'], 'first member anywhere')
    assert.deepEqual(names(filterHosts(hosts, spec({ group: group('affinity', { 'id-b': 1 }) })).hosts), ['b'])
    assert.deepEqual(names(filterHosts(hosts, spec({ group: group('anti-affinity', { 'id-b': 1 }) })).hosts), ['a', 'c'])
    assert.deepEqual(names(filterHosts(hosts, spec({ group: group('anti-affinity', { 'id-b': 1, 'id-a': 2 }, 2) })).hosts), ['b', 'c'])
  })

  it('soft affinity and soft anti-affinity weigh instead of filtering', () => {
    const hosts = [host('a'), host('b', { memoryMbUsed: 4096 })]
    const g = (policy: 'soft-affinity' | 'soft-anti-affinity') => ({ id: 'g', policy, maxPerHost: 1, hosts: new Map([['id-b', 1]]) })
    assert.deepEqual(names(filterHosts(hosts, spec({ group: g('soft-affinity') })).hosts), ['a', 'b'])
    assert.equal(weighHosts(hosts, spec({ group: g('soft-affinity') }), 'spread')[0].hostname, 'b')
    assert.equal(weighHosts(hosts, spec({ group: g('soft-anti-affinity') }), 'spread')[0].hostname, 'a')
  })

  it('same_host and different_host follow the named servers', () => {
    const hosts = [host('a'), host('b'), host('c')]
    const instanceHosts = new Map([['s1', 'id-a'], ['s2', 'id-b']])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { same_host: ['s1', 's2'] }, instanceHosts })).hosts), ['a', 'b'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { same_host: 's2' }, instanceHosts })).hosts), ['b'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { different_host: ['s1', 's2'] }, instanceHosts })).hosts), ['c'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { different_host: 'unknown' }, instanceHosts })).hosts), ['a', 'b', 'c'])
  })

  it('build_near_host_ip with cidr, different_cell and target_cell', () => {
    const hosts = [host('a', { ips: ['192.168.1.5'], cell: 'cell1' }), host('b', { ips: ['192.168.2.5'], cell: 'cell2' }), host('c', { ips: ['10.1.1.1', '192.168.1.200'], cell: 'cell3' })]
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { build_near_host_ip: '192.168.1.1', cidr: '/24' } })).hosts), ['a', 'c'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { build_near_host_ip: '192.168.1.1', cidr: '/16' } })).hosts), ['a', 'b', 'c'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { build_near_host_ip: '192.168.1.1' } })).hosts), ['a', 'c'], 'default /24')
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { different_cell: ['cell1', 'cell3'] } })).hosts), ['b'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { different_cell: 'cell2' } })).hosts), ['a', 'c'])
    assert.deepEqual(names(filterHosts(hosts, spec({ hints: { target_cell: 'cell3' } })).hosts), ['c'])
    assert.equal(inCidr('10.0.0.1', '10.0.0.0', 8), true)
    assert.equal(inCidr('11.0.0.1', '10.0.0.0', 8), false)
  })

  it('the spread weigher picks the most free RAM, pack the least', () => {
    const hosts = [host('a', { memoryMbUsed: 1024 }), host('b'), host('c', { memoryMbUsed: 4096 })]
    assert.deepEqual(weighHosts(hosts, spec(), 'spread').map((h) => h.hostname), ['b', 'a', 'c'])
    assert.deepEqual(weighHosts(hosts, spec(), 'pack').map((h) => h.hostname), ['c', 'a', 'b'])
  })
})

describe('the JSON filter (query hint)', () => {
  const big = host('big', { memoryMb: 65536, diskGb: 1000, vcpus: 32 })
  const small = host('small', { memoryMb: 2048, diskGb: 20, vcpus: 2, memoryMbUsed: 1024 })
  const passes = (q: unknown, h: HostState) => hostPassesQuery(parseJsonQuery(JSON.stringify(q)), h)

  it('compares $variables with = < > <= >=', () => {
    assert.equal(passes(['>=', '$free_ram_mb', 1024], small), true)
    assert.equal(passes(['>', '$free_ram_mb', 1024], small), false)
    assert.equal(passes(['<', '$vcpus_total', 4], small), true)
    assert.equal(passes(['<=', '$vcpus_total', 2], small), true)
    assert.equal(passes(['=', '$host', 'big'], big), true)
    assert.equal(passes(['=', '$host', 'big'], small), false)
    assert.equal(passes(['>=', '$free_disk_mb', 200 * 1024], big), true)
    assert.equal(passes(['>=', '$free_disk_mb', 200 * 1024], small), false)
  })

  it('combines with and, or, not and in, and reads dotted variables', () => {
    const q = ['and', ['>=', '$free_ram_mb', 1024], ['>=', '$free_disk_mb', 200 * 1024]]
    assert.equal(passes(q, big), true)
    assert.equal(passes(q, small), false)
    assert.equal(passes(['or', ['=', '$host', 'small'], ['>', '$vcpus_total', 16]], big), true)
    assert.equal(passes(['not', ['=', '$host', 'big']], big), false)
    assert.equal(passes(['not', ['=', '$host', 'big']], small), true)
    assert.equal(passes(['in', '$host', 'a', 'small', 'c'], small), true)
    assert.equal(passes(['in', '$host', 'a', 'c'], small), false)
    assert.equal(passes(['=', '$capabilities.enabled', true], small), true)
    assert.equal(passes(['=', '$capabilities.hypervisor_type', 'QEMU'], small), true)
  })

  it('drops arguments that resolve to nothing, like Nova', () => {
    // $nonexistent is dropped, leaving ['>=', 5] → too few arguments → the host fails.
    assert.equal(passes(['>=', '$nonexistent', 5], big), false)
    assert.equal(passes([], big), true)
  })

  it('rejects invalid JSON and unknown operators with a clear error', () => {
    assert.throws(() => parseJsonQuery('not json'), JsonQueryError)
    assert.throws(() => parseJsonQuery('{"a": 1}'), /must be a JSON list/)
    assert.throws(() => parseJsonQuery('["~", "$host", "a"]'), /unknown operator/)
  })

  it('filters hosts through the query hint', () => {
    const result = filterHosts([big, small], spec({ hints: { query: JSON.stringify(['>=', '$total_usable_ram_mb', 4096]) } }))
    assert.deepEqual(names(result.hosts), ['big'])
    assert.equal(filterHosts([big, small], spec({ hints: { query: '["=", "$host", "nowhere"]' } })).emptiedBy, 'JsonFilter')
  })
})
