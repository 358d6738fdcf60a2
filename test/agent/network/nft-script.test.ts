import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { firewallTables } from '../../../src/host/network/linux/firewall.js'
import { renderDelta, renderWhole } from '../../../src/host/network/linux/nft-script.js'
import { fullState, ID } from '../../../src/host/network/conformance/states.js'

describe('nftables ruleset: whole and delta', () => {
  const zones = { bridgePorts: ['vxlan-101'], zones: new Map([[`brq${ID.netA.slice(0, 11)}`, 1]]) }
  const base = fullState('10.255.0.1')
  const tables = () => firewallTables({ state: base, ...zones })

  it('renders the whole ruleset as delete-and-recreate of both tables', () => {
    const text = renderWhole(tables())
    assert.match(text, /ct zone set iifname map \{ "brqa0000000-00" : 1 \}/, "zones by bridge: what br_netfilter's inet hooks see as the input device")
    assert.match(text, /chain input \{\n.*\n {4}iifname \{ "vxlan-101" \} drop/, 'frames from bridge ports never reach the host')
    assert.match(text, /^table bridge pcc\ndelete table bridge pcc\ntable bridge pcc \{/)
    assert.match(text, /table inet pcc \{/)
    assert.match(text, /chain sg-d0000000-0000-4000-8000-000000000001-ingress \{\n {4}meta nfproto ipv4 ip saddr @rg-d0000000-0000-4000-8000-000000000001-4 accept\n {2}\}/)
    assert.match(text, new RegExp(`chain in-${ID.port1} \\{\\n {4}jump guest-ingress\\n {4}jump sg-${ID.group}-ingress\\n {4}drop`))
  })

  it('has no delta for the same state', () => {
    assert.equal(renderDelta(tables(), tables()), '')
  })

  it("rewrites only the group's chain when a rule changes, whatever the number of ports", () => {
    const changed = firewallTables({
      state: { ...base, securityGroups: base.securityGroups.map((g) => ({ ...g, rules: [...g.rules, { ...g.rules[0], id: 'r-ssh', direction: 'ingress', protocol: 'tcp', portRangeMin: 22, portRangeMax: 22 }] })) },
      ...zones,
    })
    assert.equal(
      renderDelta(tables(), changed),
      [
        `flush chain inet pcc sg-${ID.group}-ingress`,
        `add rule inet pcc sg-${ID.group}-ingress meta nfproto ipv4 ip saddr @rg-${ID.group}-4 accept`,
        `add rule inet pcc sg-${ID.group}-ingress meta nfproto ipv4 meta l4proto 6 th dport 22 accept`,
        '',
      ].join('\n'),
    )
  })

  it('refills only the member set when a group gains a member', () => {
    const grown = firewallTables({ state: { ...base, groupMembers: [{ groupId: ID.group, addresses: ['10.60.0.11', '10.60.0.77', '10.61.0.13'] }] }, ...zones })
    assert.equal(renderDelta(tables(), grown), `flush set inet pcc rg-${ID.group}-4\nadd element inet pcc rg-${ID.group}-4 { 10.60.0.11, 10.60.0.77, 10.61.0.13 }\n`)
  })

  it('needs the whole ruleset when ports (base chains and their maps) change', () => {
    const fewer = firewallTables({ state: { ...base, ports: base.ports.slice(1) }, ...zones })
    assert.equal(renderDelta(tables(), fewer), undefined)
    assert.equal(renderDelta(tables(), firewallTables({ state: base, ...zones, zones: new Map([[`brq${ID.netA.slice(0, 11)}`, 2]]) })), undefined, 'a zone is in a base chain')
  })
})
