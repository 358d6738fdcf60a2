import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { loadConfig } from '../../src/server/config/load.js'

describe('conductor settings', () => {
  it('have the documented defaults', () => {
    const c = loadConfig({ argv: [], env: {} })
    assert.equal(c.hostDownAfterSeconds, 60)
    assert.equal(c.hostHeartbeatSeconds, 10)
    assert.equal(c.simulatedDelayMs, 300)
    assert.equal(c.simulatedFailureRate, 0)
    assert.equal(c.schedulerWeigher, 'spread')
    assert.equal(c.reconcileSeconds, 60)
    assert.equal(c.lostHostPolicy, 'error')
  })

  it('parse from the environment and flags', () => {
    const c = loadConfig({
      argv: ['--scheduler-weigher', 'pack'],
      env: { PCC_SIMULATED_FAILURE_RATE: '0.25', PCC_SIMULATED_DELAY_MS: '0', PCC_LOST_HOST_POLICY: 'evacuate', PCC_HOST_DOWN_AFTER_SECONDS: '5' },
    })
    assert.equal(c.schedulerWeigher, 'pack')
    assert.equal(c.simulatedFailureRate, 0.25)
    assert.equal(c.simulatedDelayMs, 0)
    assert.equal(c.lostHostPolicy, 'evacuate')
    assert.equal(c.hostDownAfterSeconds, 5)
  })

  it('reject bad values naming the setting', () => {
    assert.throws(() => loadConfig({ argv: [], env: { PCC_SIMULATED_FAILURE_RATE: '2' } }), /PCC_SIMULATED_FAILURE_RATE.*0 to 1/)
    assert.throws(() => loadConfig({ argv: [], env: { PCC_SCHEDULER_WEIGHER: 'random' } }), /PCC_SCHEDULER_WEIGHER.*spread, pack/)
    assert.throws(() => loadConfig({ argv: [], env: { PCC_HOST_DOWN_AFTER_SECONDS: '0' } }), /PCC_HOST_DOWN_AFTER_SECONDS/)
    assert.throws(() => loadConfig({ argv: [], env: { PCC_LOST_HOST_POLICY: 'ignore' } }), /PCC_LOST_HOST_POLICY/)
  })
})
