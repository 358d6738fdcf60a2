/**
 * The network agent's syncNow, which a build's networking step waits for: each caller gets a state fetched after it
 * asked and applied, and the callers that ask while a sync runs share the next one (servers built together cost
 * one more apply, not one each in a row: on a busy host an apply takes seconds, and the step's wait is bounded).
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { HostNetworkAnswer } from '../../../src/contracts/network/dataplane.js'
import { EMPTY_STATE } from '../../../src/host/network/backend.js'
import { NetworkAgent, type AgentServices } from '../../../src/host/network/network-agent.js'

/** An agent whose control plane answers each state fetch when the test releases it, counting the fetches. */
function agentWithFetches() {
  const fetches: { path: string; release: (answer: HostNetworkAnswer) => void; fail: (err: Error) => void }[] = []
  const services: AgentServices = {
    root: '/nonexistent',
    controller: 'http://127.0.0.1:1',
    api: <T>(_method: string, path: string) => new Promise<T>((resolve, reject) => fetches.push({ path, release: (a) => resolve(a as T), fail: reject })),
    stream: () => Promise.reject(new Error('not used')),
    log: () => {},
  }
  const agent = NetworkAgent.create(services, { backend: 'simulated', tunnel_ip: '10.0.0.1' }, 'qemu')!
  return { agent, fetches }
}

const answer = (n: number): HostNetworkAnswer => ({ hash: `h${n}`, state: { ...EMPTY_STATE, tunnelIp: '10.0.0.1' } })
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('network agent: syncNow', () => {
  it('fetches after each call; the calls made during a sync share the next fetch and apply', async () => {
    const { agent, fetches } = agentWithFetches()
    await agent.start()
    const first = agent.syncNow()
    await settle()
    assert.equal(fetches.length, 1)
    assert.equal(fetches[0].path, '/network?wait=0')
    // Three builds ask while the first sync is fetching: none of them may use that fetch (it may predate their port).
    const later = [agent.syncNow(), agent.syncNow(), agent.syncNow()]
    await settle()
    assert.equal(fetches.length, 1, 'the later calls wait for the sync in progress')
    fetches[0].release(answer(1))
    await first
    await settle()
    assert.equal(fetches.length, 2, 'one fetch for the three later calls')
    fetches[1].release(answer(2))
    await Promise.all(later)
    // A call after that fetches anew.
    const again = agent.syncNow()
    await settle()
    assert.equal(fetches.length, 3)
    fetches[2].release(answer(3))
    await again
  })

  it('a failed fetch is tried again, and a failing sync does not stop the next one', async () => {
    const { agent, fetches } = agentWithFetches()
    await agent.start()
    const sync = agent.syncNow()
    for (let i = 0; i < 3; i++) {
      while (fetches.length <= i) await new Promise((resolve) => setTimeout(resolve, 50))
      fetches[i].fail(new Error('control plane away'))
    }
    await assert.rejects(sync, /control plane away/)
    assert.equal(fetches.length, 3, 'three attempts')
    const next = agent.syncNow()
    await settle()
    assert.equal(fetches.length, 4)
    fetches[3].release(answer(4))
    await next
  })
})
