/**
 * Test networks (src/testkit/netns.ts): every network alive on the machine has a /24 of its own, whatever process
 * made it. Two on one subnet break each other (the machine routes the subnet to one bridge only): CI once got
 * ECONNREFUSED from a server that was listening, because another test's network had drawn the same /24.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { claimSubnet, createTestNetwork } from '../../src/testkit/netns.js'

const claimDir = (octet: number) => `/run/pcc-test-subnets/${octet}`
const notRoot = process.getuid?.() === 0 ? undefined : 'not root (test networks need CAP_NET_ADMIN)'

describe('test networks', { skip: notRoot }, () => {
  it('never share a subnet while they are alive, and give theirs back on close', () => {
    // Forty random draws from 250 subnets repeat one with a probability of about 0.96.
    const nets = Array.from({ length: 40 }, () => createTestNetwork(0))
    try {
      assert.ok(nets.every((n) => !n.sharedBecause), nets.find((n) => n.sharedBecause)?.sharedBecause)
      const octets = nets.map((n) => Number(n.gateway.split('.')[2]))
      assert.equal(new Set(octets).size, octets.length, `every network its own /24: ${octets.join(' ')}`)
      nets[0].close()
      assert.equal(existsSync(claimDir(octets[0])), false, 'the claim goes with the network')
      assert.doesNotMatch(execFileSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' }), new RegExp(`^10\\.201\\.${octets[0]}\\.0/24 `, 'm'))
    } finally {
      nets.forEach((n) => n.close())
    }
  })

  it('takes over the claim of a process that died, not the claim of one alive', async () => {
    const octet = 251 // outside the 1–250 that networks draw from, so no other test meets this staging
    const dead = spawn(process.execPath, ['-e', '0'])
    await new Promise((resolve) => dead.on('exit', resolve))
    mkdirSync(claimDir(octet), { recursive: true })
    try {
      writeFileSync(`${claimDir(octet)}/pid`, String(process.pid))
      assert.throws(() => claimSubnet([octet]), /no free 10\.201\.X\.0\/24/, "a live process's claim is left alone")
      writeFileSync(`${claimDir(octet)}/pid`, String(dead.pid))
      const claim = claimSubnet([octet])
      assert.equal(claim.subnet, `10.201.${octet}`)
      claim.release()
      assert.equal(existsSync(claimDir(octet)), false)
    } finally {
      rmSync(claimDir(octet), { recursive: true, force: true })
    }
  })
})
