import { after, describe, it } from 'node:test'
import { rmSync } from 'node:fs'
import assert from 'node:assert/strict'
import { Host } from '../../src/cli/host/host.js'
import { preflight } from '../../src/cli/onboarding/preflight.js'
import { parseDuration } from '../../src/cli/commands/onboarding/common.js'
import { cliSandbox } from '../../src/testkit/cli.js'
import { stageHostRoot, type HostRootOptions } from '../../src/testkit/host-root.js'

/** Staged host roots, removed when the file ends. */
const roots: string[] = []
const staged = (options?: HostRootOptions) => {
  const root = stageHostRoot(options)
  roots.push(root)
  return root
}
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

const byName = (root: string) => Object.fromEntries(preflight(new Host(root)).map((c) => [c.name, c]))

describe('prep-node preflight checks', () => {
  it('passes a supported host with LACP and active-backup bonds', () => {
    const checks = byName(staged({ bonds: { bond0: 'IEEE 802.3ad Dynamic link aggregation', bond1: 'fault-tolerance (active-backup)' } }))
    for (const name of ['supported operating system', 'memory', 'network bonds', 'virtualization extensions (vmx/svm)', 'time synchronisation']) assert.ok(checks[name].ok, name)
  })

  it('fails bonds in any other mode (rule 3), naming the bond', () => {
    const bonds = byName(staged({ bonds: { bond0: 'load balancing (round-robin)' } }))['network bonds']
    assert.equal(bonds.ok, false)
    assert.equal(bonds.required, true)
    assert.match(bonds.detail, /bond0 must use mode active-backup or 802\.3ad/)
  })

  it('fails an unsupported OS and too little memory; warns only on missing virtualization and time sync', () => {
    const checks = byName(staged({ os: { id: 'centos', versionId: '7' }, memoryMb: 1024, cpuFlags: '', timeSync: false }))
    assert.equal(checks['supported operating system'].ok, false)
    assert.match(checks['supported operating system'].detail, /not supported \(supported: ubuntu 22.04\/24.04, debian 12\)/)
    assert.equal(checks.memory.ok, false)
    assert.equal(checks['virtualization extensions (vmx/svm)'].required, false)
    assert.equal(checks['time synchronisation'].required, false)
    assert.equal(checks['time synchronisation'].ok, false)
  })

  it('stops prep-node before touching anything when a required check fails', async () => {
    const root = staged({ bonds: { bond0: 'balance-xor' } })
    const result = await cliSandbox().run(['prep-node', '--no-prompt'], { PCCTL_HOST_ROOT: root })
    assert.equal(result.code, 1)
    assert.match(result.stderr, /✗ network bonds/)
    assert.match(result.stderr, /1 required check\(s\) failed: network bonds/)
    assert.equal(new Host(root).exists('/etc/pcc/host_id'), false)
  })
})

describe('prep-node with a registration token', () => {
  it('needs the control plane URL and says how to give it, before touching the host', async () => {
    const root = staged()
    const result = await cliSandbox().run(['prep-node', '--no-prompt', '--registration-token', 'pccr_x'], { PCCTL_HOST_ROOT: root })
    assert.equal(result.code, 1)
    assert.match(result.stderr, /--registration-token needs the control plane URL: add --account-url <url>/)
    assert.equal(new Host(root).exists('/etc/pcc/host_id'), false)
    assert.equal(new Host(root).exists('/etc/pcc/agent.json'), false)
  })
})

describe('onboarding durations', () => {
  it('reads 5m, 90s, 1h30m and plain seconds, and rejects the rest', () => {
    assert.equal(parseDuration('5m'), 300_000)
    assert.equal(parseDuration('90s'), 90_000)
    assert.equal(parseDuration('1h30m'), 5_400_000)
    assert.equal(parseDuration('42'), 42_000)
    assert.throws(() => parseDuration('five minutes'), /invalid duration/)
  })
})
