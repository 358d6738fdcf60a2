import { test } from 'node:test'
import assert from 'node:assert/strict'
import { call, computeTestbed, createBody } from './helpers.js'

test('smoke', async () => {
  const tb = await computeTestbed()
  try {
    const r = await fetch(`${tb.server.url}/compute/`)
    console.log(r.status, await r.text())
    const c = await call(tb, tb.member, 'POST', '/servers', createBody('one'), '2.96')
    console.log(c.status, JSON.stringify(c.body), [...c.headers.entries()])
    const l = await call(tb, tb.member, 'GET', '/servers/detail', undefined, '2.96')
    console.log(l.status, JSON.stringify(l.body, null, 1))
    assert.equal(c.status, 202)
  } finally {
    await tb.close()
  }
})
