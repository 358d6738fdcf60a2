/**
 * The Linux network back end: the conformance suite, run inside a test host's network namespace, then what only
 * a real host shows — the devices' settings, the DHCP server's configuration, the router's NAT rules, and drift
 * repaired by applying again — and the order a router's floating addresses and NAT rules change in.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { HostNetworkState } from '../../../src/contracts/network/dataplane.js'
import { dataplaneMissing } from '../../../src/testkit/dataplane-cluster.js'
import { runIn } from '../../../src/testkit/stand-in-guest.js'
import { networkBackendConformance } from '../../../src/host/network/conformance/suite.js'
import { linuxHost, type LinuxHost } from './linux-host.js'
import { fullState, ID } from '../../../src/host/network/conformance/states.js'

const missing = dataplaneMissing()

networkBackendConformance(
  'linux',
  async () => {
    const h = linuxHost()
    return { backend: h.backend, tunnelIp: h.address, close: () => h.close() }
  },
  { skip: missing },
)

describe('Linux network back end on a host', { skip: missing }, () => {
  let h: LinuxHost
  before(async () => {
    h = linuxHost()
    await h.backend.apply(fullState(h.address))
  })
  after(async () => {
    await h?.backend.teardown().catch(() => {})
    await h?.close()
  })
  const host = async (...args: string[]) => {
    const r = await runIn(h.namespace, args)
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const link = async (name: string) => (JSON.parse(await host('ip', '-j', '-d', 'link', 'show', 'dev', name)) as Record<string, any>[])[0] // eslint-disable-line @typescript-eslint/no-explicit-any

  it('makes VXLAN devices with the VNI, the tunnel address, port 4789, no learning, MTU 1450, and head-end replication to the peers', async () => {
    const vxlan = await link('vxlan-101')
    assert.deepEqual([vxlan.linkinfo.info_data.id, vxlan.linkinfo.info_data.local, vxlan.linkinfo.info_data.port, vxlan.linkinfo.info_data.learning], [101, h.address, 4789, false])
    assert.equal(vxlan.mtu, 1450)
    assert.equal(vxlan.master, `brq${ID.netA.slice(0, 11)}`)
    assert.equal(vxlan.linkinfo.info_slave_data.isolated, true, 'the uplink never reaches the local DHCP server')
    const fdb = (JSON.parse(await host('bridge', '-j', 'fdb', 'show', 'dev', 'vxlan-101')) as { mac: string; dst?: string }[]).filter((e) => e.dst).map((e) => `${e.mac} ${e.dst}`)
    assert.deepEqual(fdb.sort(), ['00:00:00:00:00:00 10.255.0.7', 'fa:16:3e:77:00:01 10.255.0.7', 'fa:16:3e:77:00:02 10.255.0.7'])
  })

  it('makes persistent taps in their bridges (down when the port is administratively down), and maps flat networks to the host interface', async () => {
    const tap = await link(`tap${ID.port1.slice(0, 11)}`)
    assert.equal(tap.linkinfo.info_kind, 'tun')
    assert.equal(tap.master, `brq${ID.netA.slice(0, 11)}`)
    assert.ok(tap.flags.includes('UP'))
    assert.ok(!(await link(`tap${ID.port3.slice(0, 11)}`)).flags.includes('UP'))
    assert.equal((await link('ext0')).master, `brq${ID.netExt.slice(0, 11)}`)
  })

  it('runs dnsmasq in the qdhcp namespace with the port entries, the MTU, the gateway and classless routes (metadata through the DHCP port)', async () => {
    const dir = join(h.root, 'var/lib/pcc/dhcp', ID.netA)
    const conf = readFileSync(join(dir, 'dnsmasq.conf'), 'utf8')
    assert.match(conf, /^dhcp-range=set:subnet-a1000000-0000-4000-8000-000000000001,10\.60\.0\.0,static,255\.255\.255\.0,86400s$/m)
    assert.match(conf, /option:mtu,1450/)
    assert.match(conf, /option:classless-static-route,169\.254\.169\.254\/32,10\.60\.0\.2,10\.99\.0\.0\/16,10\.60\.0\.254,0\.0\.0\.0\/0,10\.60\.0\.1$/m)
    assert.equal(readFileSync(join(dir, 'host'), 'utf8'), 'fa:16:3e:0a:00:11,host-10-60-0-11,10.60.0.11\nfa:16:3e:0a:00:12,host-10-60-0-12,10.60.0.12\n')
    const inside = await runIn(h.namespace, ['true'])
    assert.equal(inside.code, 0)
    const addresses = execFileSync('nsenter', [`--net=${join(h.root, 'run/netns', `qdhcp-${ID.netA}`)}`, 'ip', '-br', 'addr', 'show', `ns-${ID.dhcpA.slice(0, 11)}`]).toString()
    assert.match(addresses, /10\.60\.0\.2\/24/)
    assert.match(addresses, /169\.254\.169\.254\/32/)
  })

  it("puts the router's floating IPs and SNAT in its namespace", async () => {
    const ns = join(h.root, 'run/netns', `qrouter-${ID.router}`)
    const rules = execFileSync('nsenter', [`--net=${ns}`, 'nft', 'list', 'table', 'ip', 'pcc-nat']).toString()
    assert.match(rules, /ip daddr 198\.51\.100\.20 dnat to 10\.60\.0\.11/)
    assert.match(rules, /oifname "qg-f2000000-00" ip saddr 10\.60\.0\.11 snat to 198\.51\.100\.20/)
    assert.match(rules, /oifname "qg-f2000000-00" snat to 198\.51\.100\.10/)
    assert.match(rules, /iifname "qg-f2000000-00" meta mark set 0x00000001/, 'what comes from outside is marked')
    assert.match(rules, /oifname != "qg-f2000000-00" meta mark != 0x00000001 ct status dnat snat to 198\.51\.100\.10/, 'hairpin: a floating IP reached from inside')
    const routes = execFileSync('nsenter', [`--net=${ns}`, 'ip', 'route', 'show', 'default']).toString()
    assert.match(routes, /default via 198\.51\.100\.1 dev qg-f2000000-00/)
  })

  it("replaces a network's DHCP port made again (new id, new MAC) without leaving the old one in the namespace", async () => {
    const state = fullState(h.address)
    const newPort = 'ae000000-0000-4000-8000-0000000000ff'
    const moved = { ...state, networks: state.networks.map((n) => (n.dhcp ? { ...n, dhcp: { ...n.dhcp, portId: newPort, mac: 'fa:16:3e:0a:00:ff' } } : n)) }
    await h.backend.apply(moved)
    const ns = join(h.root, 'run/netns', `qdhcp-${ID.netA}`)
    const inside = execFileSync('nsenter', [`--net=${ns}`, 'ip', '-br', 'link']).toString()
    assert.match(inside, new RegExp(`^ns-${newPort.slice(0, 11)}`, 'm'))
    assert.doesNotMatch(inside, new RegExp(`ns-${ID.dhcpA.slice(0, 11)}`))
    assert.ok((await h.backend.inventory()).taps.includes(`tap${newPort.slice(0, 11)}`))
    await h.backend.apply(state)
  })

  it('repairs drift on the next apply: a deleted tap, bridge or dnsmasq comes back, other devices keep their identity', async () => {
    const index = async (name: string) => (await link(name)).ifindex as number
    const keptTap = await index(`tap${ID.port3.slice(0, 11)}`)
    await host('ip', 'link', 'del', `tap${ID.port1.slice(0, 11)}`)
    await host('ip', 'link', 'del', `brq${ID.netB.slice(0, 11)}`)
    const pid = Number(readFileSync(join(h.root, 'var/lib/pcc/dhcp', ID.netA, 'pid'), 'utf8'))
    process.kill(pid, 'SIGKILL')
    await h.backend.apply(fullState(h.address))
    assert.equal((await link(`tap${ID.port1.slice(0, 11)}`)).master, `brq${ID.netA.slice(0, 11)}`)
    assert.equal((await link(`tap${ID.port3.slice(0, 11)}`)).master, `brq${ID.netB.slice(0, 11)}`)
    assert.equal(await index(`tap${ID.port3.slice(0, 11)}`), keptTap)
    assert.ok((await h.backend.inventory()).dhcpServers.includes(ID.netA))
  })
})

/**
 * A floating address must never be held by the router without the DNAT rule that sends it on: the router would
 * answer for it itself (a floating IP moved to a server whose guest is not up yet answered pings). The back end
 * runs here with `ip` and `nft` shims first in its PATH, which log each call with its network namespace before
 * running the real tool: the calls made in the router's namespace, in order, are what is checked.
 */
describe("a router's floating addresses follow their NAT rules", { skip: missing }, () => {
  let h: LinuxHost
  let scratch: string
  let log: string
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'pcc-nat-order-'))
    log = join(scratch, 'calls.log')
    for (const tool of ['ip', 'nft']) {
      const real = execFileSync('sh', ['-c', `command -v ${tool}`]).toString().trim()
      writeFileSync(join(scratch, tool), `#!/bin/sh\necho "$(readlink /proc/self/ns/net) ${tool} $*" >> '${log}'\nexec '${real}' "$@"\n`, { mode: 0o755 })
    }
    h = linuxHost({ ...process.env, PATH: `${scratch}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` })
  })
  after(async () => {
    try {
      await h?.backend.teardown().catch(() => {})
      await h?.close()
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true })
    }
  })

  const routerNs = () => join(h.root, 'run/netns', `qrouter-${ID.router}`)
  /** Applies `state`; answers the `ip`/`nft` calls the back end made in the router's namespace, in order. */
  const applyLogged = async (state: HostNetworkState) => {
    writeFileSync(log, '')
    await h.backend.apply(state)
    const inode = statSync(routerNs()).ino
    return readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith(`net:[${inode}] `)).map((l) => l.slice(l.indexOf(' ') + 1))
  }
  const at = (calls: string[], pattern: RegExp) => {
    const i = calls.findIndex((c) => pattern.test(c))
    assert.ok(i >= 0, `${pattern} among:\n${calls.join('\n')}`)
    return i
  }
  const none = (calls: string[], pattern: RegExp) => assert.ok(!calls.some((c) => pattern.test(c)), `no ${pattern} among:\n${calls.join('\n')}`)
  const NAT = /^nft -f -$/
  const withFloating = (floatingIps: { floatingIpAddress: string; fixedIpAddress: string }[]): HostNetworkState => {
    const state = fullState(h.address)
    return { ...state, routers: state.routers.map((r) => ({ ...r, floatingIps })) }
  }
  const held = () => execFileSync('nsenter', [`--net=${routerNs()}`, 'ip', '-br', 'addr', 'show', 'dev', 'qg-f2000000-00']).toString()
  const rules = () => execFileSync('nsenter', [`--net=${routerNs()}`, 'nft', 'list', 'table', 'ip', 'pcc-nat']).toString()
  const first = { floatingIpAddress: '198.51.100.20', fixedIpAddress: '10.60.0.11' }

  it("adds a new router's floating address only after its NAT rules are loaded", async () => {
    const calls = await applyLogged(withFloating([first]))
    assert.ok(at(calls, NAT) < at(calls, /^ip addr add 198\.51\.100\.20\/32 /), calls.join('\n'))
    assert.match(held(), /198\.51\.100\.20\/32/)
    assert.match(rules(), /ip daddr 198\.51\.100\.20 dnat to 10\.60\.0\.11/)
  })

  it('adds a floating IP associated later after its DNAT rule, leaving the others alone', async () => {
    const calls = await applyLogged(withFloating([first, { floatingIpAddress: '198.51.100.21', fixedIpAddress: '10.60.0.12' }]))
    assert.ok(at(calls, NAT) < at(calls, /^ip addr add 198\.51\.100\.21\/32 /), calls.join('\n'))
    none(calls, /^ip addr (add|del) 198\.51\.100\.20\//)
    assert.match(held(), /198\.51\.100\.21\/32/)
    assert.match(rules(), /ip daddr 198\.51\.100\.21 dnat to 10\.60\.0\.12/)
  })

  it('keeps the address of a floating IP moved to another server of the router: only its rule changes', async () => {
    const calls = await applyLogged(withFloating([first, { floatingIpAddress: '198.51.100.21', fixedIpAddress: '10.60.0.13' }]))
    at(calls, NAT)
    none(calls, /^ip addr (add|del) 198\.51\.100\.2[01]\//)
    assert.match(rules(), /ip daddr 198\.51\.100\.21 dnat to 10\.60\.0\.13/)
    assert.doesNotMatch(rules(), /10\.60\.0\.12/)
  })

  it('takes a released floating address off before the rules without it are loaded', async () => {
    const calls = await applyLogged(withFloating([first]))
    assert.ok(at(calls, /^ip addr del 198\.51\.100\.21\/32 /) < at(calls, NAT), calls.join('\n'))
    assert.doesNotMatch(held(), /198\.51\.100\.21\//)
    assert.doesNotMatch(rules(), /198\.51\.100\.21/)
    assert.match(held(), /198\.51\.100\.20\/32/, 'the other one stays')
  })

  it('adds the floating addresses again after the rules when the gateway port is made again', async () => {
    execFileSync('ip', ['-n', h.namespace, 'link', 'del', 'tapf2000000-00'])
    const calls = await applyLogged(withFloating([first]))
    assert.ok(at(calls, NAT) < at(calls, /^ip addr add 198\.51\.100\.20\/32 /), calls.join('\n'))
    assert.match(held(), /198\.51\.100\.20\/32/)
  })

  it('leaves unchanged routers and DHCP servers alone: the same state again runs no command in their namespaces', async () => {
    const state = withFloating([first])
    await h.backend.apply(state)
    writeFileSync(log, '')
    await h.backend.apply(state)
    const hostNs = statSync(join('/run/netns', h.namespace)).ino
    const inside = readFileSync(log, 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith(`net:[${hostNs}] `))
    assert.deepEqual(inside, [])
  })
})
