/**
 * pcctl's native network, identity and host commands against the real `openstack` client on one cloud: the same
 * data in `-f json`, the same table headers and show fields, creates and deletes that take effect for openstack
 * too, name-or-id lookups, openstack's not-found messages (exit 1) and usage mistakes (exit 2).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { cliSandbox, type CliRun } from '../../src/testkit/cli.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../src/testkit/openstack.js'

type Row = Record<string, unknown>

/** The column names of a cliff table: its first line of cells. */
function tableHeaders(table: string): string[] {
  const line = table.split('\n').find((l) => l.startsWith('|'))
  assert.ok(line, `a table:\n${table}`)
  return line.split('|').slice(1, -1).map((c) => c.trim())
}

describe('pcctl native network, identity and host commands match openstack', () => {
  let server: TestServer
  let env: Record<string, string>
  const sandbox = cliSandbox()
  const pcctl = (...args: string[]): Promise<CliRun> => sandbox.run(args, env)
  /** pcctl ARGS -f json, parsed; the command must succeed. */
  const pcctlJson = async <T = unknown>(...args: string[]): Promise<T> => {
    const r = await pcctl(...args, '-f', 'json')
    assert.equal(r.code, 0, `pcctl ${args.join(' ')}: ${r.stderr}`)
    return JSON.parse(r.stdout) as T
  }
  /** Both clients' -f json of the same command, compared as data. */
  const sameJson = async <T = unknown>(...args: string[]): Promise<T> => {
    const [theirs, ours] = await Promise.all([openstackJson<T>(args, env), pcctlJson<T>(...args)])
    assert.deepEqual(ours, theirs, `pcctl ${args.join(' ')} -f json`)
    return ours
  }
  /**
   * Both clients' tables of the same command, compared as text: the same headers (or show fields) and the same
   * human forms (UP, External, pools, lists). Used where those forms matter; elsewhere -f json already proves the
   * headers, since its keys are the headers.
   */
  const sameTable = async (...args: string[]): Promise<string> => {
    const [theirs, ours] = await Promise.all([openstack(args, env), pcctl(...args)])
    assert.equal(theirs.code, 0, theirs.stderr)
    assert.equal(ours.code, 0, ours.stderr)
    assert.deepEqual(tableHeaders(ours.stdout), tableHeaders(theirs.stdout), `pcctl ${args.join(' ')}: headers`)
    assert.equal(ours.stdout, theirs.stdout, `pcctl ${args.join(' ')}: table`)
    return ours.stdout
  }
  const noStack = (r: CliRun) => assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')

  let token: string
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': token, 'openstack-api-version': 'compute 2.96', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }

  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true, env: { PCC_SIMULATED_HOSTS: '1', PCC_SIMULATED_DELAY_MS: '5' } })
    env = adminEnv(server)
    token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
  })
  after(async () => server?.close())

  let netA: Row
  it('network create sets what it is given and shows exactly what openstack shows; list and show agree by name and by id', async () => {
    netA = await pcctlJson<Row>('network', 'create', 'net-a', '--mtu', '1400', '--description', 'first net')
    assert.deepEqual([netA.name, netA.mtu, netA.description, netA['router:external']], ['net-a', 1400, 'first net', false])
    assert.deepEqual(await openstackJson(['network', 'show', 'net-a'], env), netA, 'openstack sees the created network as pcctl printed it')
    const ext = await pcctlJson<Row>('network', 'create', 'ext-net', '--external', '--share')
    assert.deepEqual([ext['router:external'], ext.shared], [true, true])
    assert.deepEqual(await pcctlJson('network', 'show', ext.id as string), await pcctlJson('network', 'show', 'ext-net'))

    const listed = await sameJson<Row[]>('network', 'list', '--long')
    assert.deepEqual(listed.map((n) => [n.Name, n['Router Type']]).sort(), [['ext-net', true], ['net-a', false]])
    const table = await sameTable('network', 'list', '--long')
    assert.match(table, /\| ext-net \| ACTIVE \|.*\| UP +\| True +\|.*\| External +\|/)
  })

  let subA: Row
  it('subnet create with pools, DNS servers, no DHCP and a gateway; subnet list --network and --long, subnet show', async () => {
    subA = await pcctlJson<Row>(
      'subnet', 'create', 'sub-a', '--network', 'net-a', '--subnet-range', '10.20.0.0/24', '--gateway', '10.20.0.1', '--no-dhcp',
      '--dns-nameserver', '8.8.8.8', '--dns-nameserver', '1.1.1.1', '--allocation-pool', 'start=10.20.0.10,end=10.20.0.99',
    )
    assert.deepEqual([subA.network_id, subA.enable_dhcp, subA.gateway_ip], [netA.id, false, '10.20.0.1'])
    assert.deepEqual(subA.allocation_pools, [{ start: '10.20.0.10', end: '10.20.0.99' }])
    assert.deepEqual([...(subA.dns_nameservers as string[])].sort(), ['1.1.1.1', '8.8.8.8'])
    await pcctlJson('subnet', 'create', 'ext-sub', '--network', 'ext-net', '--subnet-range', '172.24.4.0/24')

    const onA = await sameJson<Row[]>('subnet', 'list', '--network', 'net-a', '--long')
    assert.deepEqual(onA.map((x) => x.Name), ['sub-a'])
    await sameJson('subnet', 'show', 'sub-a')
    const table = await sameTable('subnet', 'show', subA.id as string)
    assert.match(table, /\| allocation_pools +\| 10\.20\.0\.10-10\.20\.0\.99 +\|/)
    assert.match(table, /\| dns_nameservers +\| 1\.1\.1\.1, 8\.8\.8\.8 +\|/)
  })

  let portA: Row
  it('port create with a fixed IP by subnet name; port list --network, --server and --long; port show', async () => {
    portA = await pcctlJson<Row>('port', 'create', 'port-a', '--network', 'net-a', '--fixed-ip', 'subnet=sub-a,ip-address=10.20.0.50')
    assert.deepEqual(portA.fixed_ips, [{ subnet_id: subA.id, ip_address: '10.20.0.50' }])
    await sameTable('port', 'show', 'port-a')

    // --server finds the server by name and lists the ports bound to it (device_id).
    const flavor = (await api('GET', '/compute/v2.1/flavors')).body.flavors[0].id
    const image = (await api('GET', '/image/v2/images')).body.images[0].id
    const created = await api('POST', '/compute/v2.1/servers', { server: { name: 'web-1', flavorRef: flavor, imageRef: image, networks: 'none' } })
    assert.equal(created.status, 202, JSON.stringify(created.body))
    const bound = await api('POST', '/network/v2.0/ports', { port: { name: 'web-1-port', network_id: netA.id, device_id: created.body.server.id, device_owner: 'compute:nova' } })
    assert.equal(bound.status, 201, JSON.stringify(bound.body))
    const ofServer = await sameJson<Row[]>('port', 'list', '--server', 'web-1')
    assert.deepEqual(ofServer.map((p) => p.ID), [bound.body.port.id])
    const onA = await pcctlJson<Row[]>('port', 'list', '--network', 'net-a')
    assert.deepEqual(onA.map((p) => p.Name).sort(), ['port-a', 'web-1-port'])

    // openstackclient 6.0 asks for fields=security_group_ids, which Neutron ignores, so its column is always None;
    // pcctl shows the groups. Everything else is the same.
    const [theirs, ours] = await Promise.all([openstackJson<Row[]>(['port', 'list', '--long'], env), pcctlJson<Row[]>('port', 'list', '--long')])
    const without = (rows: Row[]) => rows.map(({ 'Security Groups': _groups, ...rest }) => rest)
    assert.deepEqual(without(ours), without(theirs))
    assert.deepEqual(ours.find((p) => p.ID === portA.id)?.['Security Groups'], portA.security_group_ids)
  })

  it('floating ip create on the external network; show by address and by id; list; delete takes effect', async () => {
    const fip = await pcctlJson<Row>('floating', 'ip', 'create', 'ext-net')
    assert.match(fip.floating_ip_address as string, /^172\.24\.4\./)
    await sameJson('floating', 'ip', 'show', fip.floating_ip_address as string)
    assert.deepEqual(await pcctlJson('floating', 'ip', 'show', fip.id as string), await pcctlJson('floating', 'ip', 'show', fip.floating_ip_address as string))
    await sameTable('floating', 'ip', 'list', '--long')

    const deleted = await pcctl('floating', 'ip', 'delete', fip.floating_ip_address as string)
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.deepEqual(await openstackJson(['floating', 'ip', 'list'], env), [])
  })

  it('security group create, show, list; rule create (tcp port, icmp egress) and rule list of one group and of all', async () => {
    const sg = await pcctlJson<Row>('security', 'group', 'create', 'sg-a', '--description', 'web servers')
    assert.equal(sg.description, 'web servers')
    assert.equal((sg.rules as Row[]).length, 2, 'a new group has the two egress rules')
    const groups = await sameJson<Row[]>('security', 'group', 'list')
    assert.deepEqual(groups.map((g) => g.Name).sort(), ['default', 'sg-a'])

    const ssh = await pcctlJson<Row>('security', 'group', 'rule', 'create', 'sg-a', '--protocol', 'tcp', '--dst-port', '22', '--remote-ip', '10.0.0.0/8')
    assert.deepEqual([ssh.direction, ssh.protocol, ssh.port_range_min, ssh.port_range_max, ssh.remote_ip_prefix, ssh.ether_type], ['ingress', 'tcp', 22, 22, '10.0.0.0/8', 'IPv4'])
    await sameJson('security', 'group', 'rule', 'show', ssh.id as string)
    const icmp = await pcctlJson<Row>('security', 'group', 'rule', 'create', 'sg-a', '--protocol', 'ICMP', '--egress', '--ethertype', 'ipv4', '--dst-port', '80')
    assert.deepEqual([icmp.direction, icmp.protocol, icmp.port_range_min, icmp.remote_ip_prefix], ['egress', 'icmp', null, '0.0.0.0/0'], 'ports are ignored for ICMP, as osc does')
    // The group's rules, formatted as osc formats them (empty values and the group's own ids left out).
    const shown = await sameTable('security', 'group', 'show', 'sg-a')
    assert.match(shown, /direction='ingress', ethertype='IPv4', id='[^']+', normalized_cidr='10\.0\.0\.0\/8', port_range_max='22', port_range_min='22', protocol='tcp'/)

    const table = await sameTable('security', 'group', 'rule', 'list', 'sg-a')
    assert.match(table, new RegExp(`\\| ${ssh.id} \\| tcp +\\| IPv4 +\\| 10\\.0\\.0\\.0/8 \\| 22:22 +\\| ingress`))
    const all = await pcctlJson<Row[]>('security', 'group', 'rule', 'list')
    assert.ok(all.every((r) => typeof r['Security Group'] === 'string'), 'without a group each rule names its group')
    assert.equal(all.filter((r) => r['Security Group'] === sg.id).length, 4)
  })

  it('deletes several resources, reports each failure as openstack does and exits 1; the others are gone', async () => {
    await pcctlJson('network', 'create', 'tmp-1')
    await pcctlJson('security', 'group', 'create', 'tmp-sg')
    const r = await pcctl('network', 'delete', 'tmp-1', 'no-such-net')
    assert.equal(r.code, 1)
    assert.match(r.stderr, /Failed to delete network with name or ID 'no-such-net': No Network found for no-such-net/)
    assert.match(r.stderr, /1 of 2 networks failed to delete\./)
    noStack(r)
    assert.ok(!(await openstackJson<Row[]>(['network', 'list'], env)).some((n) => n.Name === 'tmp-1'), 'tmp-1 is deleted')

    const sg = await pcctl('security', 'group', 'delete', 'tmp-sg')
    assert.equal(sg.code, 0, sg.stderr)
    const port = await pcctl('port', 'delete', 'port-a')
    assert.equal(port.code, 0, port.stderr)
    const left = await pcctlJson<Row[]>('port', 'list', '--network', 'net-a')
    assert.ok(!left.some((p) => p.ID === portA.id), 'port-a is deleted')
    const gone = await openstack(['security', 'group', 'show', 'tmp-sg'], env)
    assert.equal(gone.code, 1, 'openstack no longer finds tmp-sg')
  })

  it('says what openstack says when nothing or more than one resource has the name (exit 1, no stack trace)', async () => {
    const theirs = await openstack(['network', 'show', 'nope'], env)
    assert.match(theirs.stderr, /No Network found for nope/)
    for (const [args, message] of [
      [['network', 'show', 'nope'], /^Error: No Network found for nope$/m],
      [['subnet', 'show', 'nope'], /No Subnet found for nope/],
      [['port', 'show', 'nope'], /No Port found for nope/],
      [['floating', 'ip', 'show', '10.9.9.9'], /No FloatingIP found for 10\.9\.9\.9/],
      [['security', 'group', 'show', 'nope'], /No SecurityGroup found for nope/],
      [['subnet', 'list', '--network', 'nope'], /No Network found for nope/],
      [['port', 'list', '--server', 'nope'], /No server with a name or ID of 'nope' exists\./],
      [['project', 'show', 'nope'], /No project with a name or ID of 'nope' exists\./],
      [['user', 'show', 'nope'], /No user with a name or ID of 'nope' exists\./],
      [['role', 'assignment', 'list', '--user', 'nope'], /No user with a name or ID of 'nope' exists\./],
      [['host', 'show', 'nope'], /No host with a name or ID of 'nope' exists\./],
    ] as [string[], RegExp][]) {
      const r = await pcctl(...args)
      assert.equal(r.code, 1, `pcctl ${args.join(' ')}`)
      assert.match(r.stderr, message)
      noStack(r)
    }
    await pcctlJson('network', 'create', 'dup')
    await pcctlJson('network', 'create', 'dup')
    const dup = await pcctl('network', 'show', 'dup')
    assert.equal(dup.code, 1)
    assert.match(dup.stderr, /More than one Network exists with the name 'dup'\./)
  })

  it('exits 2 on usage mistakes, naming the flag; 1 with the service message on API errors', async () => {
    for (const [args, message] of [
      [['network', 'list', '--lng'], /unknown flag --lng for 'network list' \(did you mean --long\?\)/],
      [['network', 'create'], /missing argument: pcctl network create <name>/],
      [['subnet', 'create', 'x', '--subnet-range', '10.1.0.0/24'], /--network is required/],
      [['subnet', 'create', 'x', '--network', 'net-a', '--allocation-pool', 'start=10.20.0.2'], /--allocation-pool start=10\.20\.0\.2: missing end/],
      [['subnet', 'create', 'x', '--network', 'net-a', '--ip-version', '5'], /--ip-version: choose from 4, 6/],
      [['security', 'group', 'rule', 'create', 'sg-a', '--dst-port', 'ssh'], /--dst-port ssh: use a port/],
      [['security', 'group', 'rule', 'create', 'sg-a', '--ingress', '--egress'], /either --ingress or --egress/],
      [['network', 'create', 'n', '--mtu', 'big'], /--mtu needs an integer/],
      [['port', 'list', '-f', 'xml'], /invalid format xml/],
    ] as [string[], RegExp][]) {
      const r = await pcctl(...args)
      assert.equal(r.code, 2, `pcctl ${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
    }
    const api = await pcctl('network', 'create', 'too-big', '--mtu', '99999')
    assert.equal(api.code, 1)
    // A tenant network is VXLAN: its MTU is the underlay's 1500 less the tunnel's 50 (Neutron's ml2 message).
    assert.match(api.stderr, /Requested MTU is too big, maximum is 1450 \(HTTP 400\)/)
    noStack(api)
  })

  it('project, user and role assignment lists and shows match openstack, with --long and --names', async () => {
    await sameJson('project', 'list', '--long')
    const admin = await sameJson<Row>('project', 'show', 'admin')
    assert.deepEqual(await pcctlJson('project', 'show', admin.id as string), admin)
    await sameTable('project', 'show', 'admin')
    await sameJson('user', 'list', '--long')
    await sameJson('user', 'show', 'admin')
    await sameJson('role', 'assignment', 'list')
    const named = await sameJson<Row[]>('role', 'assignment', 'list', '--user', 'admin', '--project', 'admin', '--names')
    assert.deepEqual(named.map((a) => [a.Role, a.User, a.Project]), [['admin', 'admin@Default', 'admin@Default']])
    await sameTable('role', 'assignment', 'list', '--names')
  })

  it('catalog list prints the same json and the same table as openstack', async () => {
    await sameJson('catalog', 'list')
    await sameTable('catalog', 'list')
  })

  it('host list and host show are the resource manager\'s hosts, found by hostname or id', async () => {
    const hosts = (await api('GET', '/resmgr/v1/hosts')).body as { id: string; info: { hostname: string }; roles: string[]; agent_version: string; protocol_version: number | null }[]
    assert.equal(hosts.length, 1)
    const listed = await pcctlJson<Row[]>('host', 'list')
    assert.deepEqual(listed, [{ ID: hosts[0].id, Hostname: hosts[0].info.hostname, Roles: hosts[0].roles, 'Role Status': 'ok', Responding: true, 'Agent Version': hosts[0].agent_version, Protocol: hosts[0].protocol_version }])
    const table = await pcctl('host', 'list', '--long')
    assert.deepEqual(tableHeaders(table.stdout), ['ID', 'Hostname', 'Roles', 'Role Status', 'Responding', 'Agent Version', 'Protocol', 'IP Addresses', 'OS', 'Last Response', 'Message'])
    const byName = await pcctlJson<Row>('host', 'show', hosts[0].info.hostname)
    assert.equal(byName.id, hosts[0].id)
    assert.deepEqual(byName.roles, ['hypervisor'])
    const byId = await pcctlJson<Row>('host', 'show', hosts[0].id)
    assert.deepEqual([byId.id, byId.hostname], [hosts[0].id, hosts[0].info.hostname])
  })
})
