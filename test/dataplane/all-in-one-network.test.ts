/**
 * Guest networking in the all-in-one mode: one pcc-server process with `PCC_LOCAL_HYPERVISOR=qemu` runs the whole
 * cloud on its machine — here a network namespace of its own, with an interface `ext0` to an "external" namespace
 * named by `PCC_LOCAL_PHYSICAL_INTERFACES=public:ext0`. Its own agent holds the hypervisor and network roles: a
 * guest on a tenant network gets its address by DHCP, reads its metadata, reaches the outside through the router's
 * SNAT and is reached through a floating IP, where the outside logs in over SSH with the server's key pair as the
 * default image's os_admin_user; deleting everything leaves nothing of the data plane.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ComputeClient, until } from '../../src/testkit/compute-api.js'
import { adminEnv, openstack } from '../../src/testkit/openstack.js'
import { dataplaneMissing, externalNetwork } from '../../src/testkit/dataplane-cluster.js'
import { createTestNetwork, type TestNetwork } from '../../src/testkit/netns.js'
import { RemoteLinuxBackend } from '../../src/testkit/network-backend-host.js'
import { startAllInOne } from '../../src/testkit/all-in-one.js'
import type { ServerProcess } from '../../src/testkit/process.js'
import { qemuProcessesUnder } from '../../src/testkit/qemu-cloud.js'
import { realGuestsMissing } from '../../src/testkit/qemu.js'
import { runIn } from '../../src/testkit/stand-in-guest.js'
import { EXTERNAL_GATEWAY, latest, probeScript } from './guest-probe.js'

const PASSWORD = 'all-in-one-network-password'
const missing = realGuestsMissing() ?? dataplaneMissing()

describe('all-in-one: real guest networking on one machine', { skip: missing }, () => {
  let net: TestNetwork
  let ext: { namespace: string; close(): void }
  let dataDir: string
  let server: ServerProcess | undefined
  let api: ComputeClient
  let token: string
  let url: string

  before(async () => {
    net = createTestNetwork(1)
    if (net.sharedBecause) throw new Error(net.sharedBecause)
    ext = externalNetwork(net.hosts[0].namespace!, 'ext0', `${EXTERNAL_GATEWAY}/24`)
    dataDir = mkdtempSync(join(tmpdir(), 'pcc-all-in-one-net-'))
    ;({ server, url, token, api } = await startAllInOne({ host: net.hosts[0], dataDir, password: PASSWORD, env: { PCC_LOCAL_PHYSICAL_INTERFACES: 'public:ext0' } }))
  })
  after(async () => {
    // The agent's data plane goes through its own back end, then the server, its guests and the namespaces.
    const backend = net && new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    await backend?.teardown().catch(() => {})
    await backend?.close()
    await server?.stop('SIGTERM')
    for (const pid of qemuProcessesUnder(join(dataDir, 'host'))) process.kill(pid, 'SIGKILL')
    ext?.close()
    net?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  /** The `openstack` lines of docs/network.md's all-in-one worked example, continuation lines joined, comments gone. */
  const workedExample = (): string[] => {
    const doc = readFileSync(new URL('../../../docs/network.md', import.meta.url), 'utf8')
    const section = doc.slice(doc.indexOf('### All-in-one: an external network and floating IPs, worked through'))
    const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3))
    const lines = block.replace(/\\\n\s*/g, ' ').split('\n').map((l) => l.replace(/\s+#.*$/, '').trim())
    return lines.filter((l) => l.startsWith('openstack '))
  }

  const neutron = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/network/v2.0${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`)
    return text ? JSON.parse(text) : undefined
  }

  it('boots a guest that leases its address, reads its metadata, reaches out through SNAT and is reached through a floating IP; nothing is left after', async () => {
    const hosts = await until('the local host with both roles', 120_000, async () => {
      const r = await fetch(`${url}/resmgr/v1/hosts`, { headers: { 'x-auth-token': token } })
      const list = (await r.json()) as { roles: string[]; role_status: string }[]
      return list.length === 1 && list[0].roles.includes('network') && list[0].role_status === 'ok' ? list : undefined
    }, 500)
    assert.deepEqual(hosts[0].roles.sort(), ['hypervisor', 'network'])
    // docs/network.md's worked example, its openstack lines as a user pastes them (the key pair and the probing user
    // data added to its server create, for the checks below), the floating IP it prints in its place.
    const env = { ...adminEnv({ url }), OS_PASSWORD: PASSWORD }
    const keyFile = join(dataDir, 'id')
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'all-in-one', '-f', keyFile])
    assert.equal((await openstack(['keypair', 'create', '--public-key', `${keyFile}.pub`, 'login'], env)).code, 0)
    const userData = join(dataDir, 'user-data')
    writeFileSync(userData, probeScript('10.0.0.1', 'pinger'))
    let fipAddress = ''
    for (const line of workedExample()) {
      const args = line.split(/\s+/).slice(1).map((a) => (a === '203.0.113.11' && fipAddress ? fipAddress : a))
      if (args[0] === 'server' && args[1] === 'create') args.splice(-1, 0, '--key-name', 'login', '--user-data', userData)
      const run = await openstack([...args, ...(args.join(' ') === 'floating ip create public' ? ['-f', 'json'] : [])], env, 300_000)
      assert.equal(run.code, 0, `${line}: ${run.stderr}`)
      if (args.join(' ') === 'floating ip create public') fipAddress = JSON.parse(run.stdout).floating_ip_address
    }
    assert.match(fipAddress, /^203\.0\.113\./)
    const id = (await api.call('GET', '/servers?name=vm1')).body.servers[0].id as string
    const port = (await neutron('GET', `/ports?device_id=${id}`)).ports[0]
    const image = (await api.other('GET', '/image/v2/images?name=pcc-busybox-x86_64')).body.images[0]
    assert.equal(image.os_admin_user, 'pcc', 'the image names its login user')
    const consoleOf = async () => ((await api.action(id, 'os-getConsoleOutput', {})).body.output as string | undefined) ?? ''
    const log = await until('the guest probing', 240_000, async () => {
      const text = await consoleOf()
      return latest(text, 'external-ping')?.value === 'ok' && latest(text, 'peer-ping')?.value === 'ok' ? text : undefined
    }, 1000)
    assert.match(log, new RegExp(`pcc-guest: address eth0 ${port.fixed_ips[0].ip_address.replaceAll('.', '\\.')}/24 gateway 10\\.0\\.0\\.1 mtu 1450`))
    assert.match(log, new RegExp(`pcc-guest: metadata-uuid ${id}`))
    await until('the floating IP reached from outside', 60_000, async () => ((await runIn(ext.namespace, ['busybox', 'ping', '-c', '1', '-W', '1', fipAddress])).code === 0 ? true : undefined), 500)
    // SSH from outside through the floating IP, as the image's os_admin_user with the key pair; the guest reads its
    // metadata with curl as Tempest's scenarios do.
    const ssh = ['ssh', '-i', keyFile, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=5', `${image.os_admin_user}@${fipAddress}`]
    const session = await runIn(ext.namespace, [...ssh, 'hostname; curl -s http://169.254.169.254/openstack/latest/meta_data.json'], 30_000)
    assert.equal(session.code, 0, session.stderr)
    const [hostname, metadata] = session.stdout.split('\n')
    assert.equal(hostname, 'vm1')
    assert.equal(JSON.parse(metadata).uuid, id)
    assert.deepEqual(Object.keys(JSON.parse(metadata).public_keys), ['login'])

    // And away again, as a user would.
    for (const args of [['server', 'delete', '--wait', 'vm1'], ['floating', 'ip', 'delete', fipAddress], ['router', 'remove', 'subnet', 'edge', 'tenant-v4'], ['router', 'delete', 'edge'], ['network', 'delete', 'tenant', 'public']]) {
      const run = await openstack(args, env, 300_000)
      assert.equal(run.code, 0, `openstack ${args.join(' ')}: ${run.stderr}`)
    }
    const backend = new RemoteLinuxBackend(net.hosts[0].namespace!, join(dataDir, 'host'), null)
    try {
      const empty = JSON.stringify({ bridges: [], tunnels: [], taps: [], namespaces: [], dhcpServers: [], firewallPorts: [] })
      await until('the machine without guest networking', 30_000, async () => (JSON.stringify(await backend.inventory()) === empty ? true : undefined), 500)
    } finally {
      await backend.close()
    }
  })
})
