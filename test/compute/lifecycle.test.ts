/** The API with the conductor running (simulated hosts): REST create → ACTIVE, actions, delete → 404. */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { call, computeTestbed, createBody, type ComputeTestbed } from './helpers.js'

async function waitStatus(tb: ComputeTestbed, id: string, status: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs
  let last: Record<string, unknown> = {}
  while (Date.now() < deadline) {
    const r = await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')
    if (r.status === 404 && status === 'GONE') return {}
    last = r.body?.server ?? {}
    if (last.status === status && last['OS-EXT-STS:task_state'] === null) return last
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.fail(`${id} did not reach ${status}: ${JSON.stringify(last)}`)
}

test('lifecycle through the conductor: build, reboot, stop/start, resize/confirm, createImage, delete', { timeout: 300_000 }, async () => {
  const tb = await computeTestbed('sqlite', { PCC_SIMULATED_HOSTS: '3' }, true)
  try {
    const created = await call(tb, tb.member, 'POST', '/servers', createBody('life'), '2.96')
    assert.equal(created.status, 202)
    const id = created.body.server.id
    const active = await waitStatus(tb, id, 'ACTIVE')
    assert.equal(active['OS-EXT-STS:power_state'], 1)
    assert.ok(active['OS-SRV-USG:launched_at'])
    const admin = (await call(tb, tb.admin, 'GET', `/servers/${id}`, undefined, '2.96')).body.server
    assert.ok(admin['OS-EXT-SRV-ATTR:host'], 'scheduled on a host')
    assert.equal(admin.host_status, 'UP')
    // The console log comes from the guest on its hypervisor: the whole log, or its last `length` lines.
    const log = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { 'os-getConsoleOutput': {} }, '2.96')
    assert.equal(log.status, 200, JSON.stringify(log.body))
    assert.match(log.body.output, new RegExp(`cloud-init: instance ${id}`))
    assert.match(log.body.output, /life login: \n$/)
    const tail = await call(tb, tb.member, 'POST', `/servers/${id}/action`, { 'os-getConsoleOutput': { length: '1' } }, '2.96')
    assert.equal(tail.body.output, 'life login: ', 'the last line, without the final newline')
    assert.equal((await call(tb, tb.member, 'POST', `/servers/${id}/action`, { 'os-getConsoleOutput': { length: -2 } }, '2.96')).status, 400)
    assert.equal((await call(tb, tb.other, 'POST', `/servers/${id}/action`, { 'os-getConsoleOutput': {} }, '2.96')).status, 404, 'invisible to another project')
    const steps: [unknown, string, number][] = [
      [{ reboot: { type: 'SOFT' } }, 'ACTIVE', 202],
      [{ 'os-stop': null }, 'SHUTOFF', 202],
      [{ 'os-start': null }, 'ACTIVE', 202],
      [{ resize: { flavorRef: '2' } }, 'VERIFY_RESIZE', 202],
      [{ confirmResize: null }, 'ACTIVE', 204],
      [{ createImage: { name: 'snap' } }, 'ACTIVE', 202],
    ]
    for (const [body, status, code] of steps) {
      const r = await call(tb, tb.member, 'POST', `/servers/${id}/action`, body, '2.96')
      assert.equal(r.status, code, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`)
      await waitStatus(tb, id, status)
    }
    assert.equal((await call(tb, tb.member, 'GET', `/servers/${id}`, undefined, '2.96')).body.server.flavor.original_name, 'm1.small')
    const actions = (await call(tb, tb.member, 'GET', `/servers/${id}/os-instance-actions`, undefined, '2.96')).body.instanceActions.map((a: { action: string }) => a.action)
    for (const a of ['create', 'reboot', 'stop', 'start', 'resize', 'confirmResize', 'createImage']) assert.ok(actions.includes(a), a)
    assert.equal((await call(tb, tb.member, 'DELETE', `/servers/${id}`)).status, 204)
    await waitStatus(tb, id, 'GONE')
  } finally {
    await tb.close()
  }
})
