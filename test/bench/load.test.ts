/** Reading wrk's report (bench/load.ts): the throughput figures depend on these numbers being read right. */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseWrk, wrkDurationMs } from '../../bench/load.js'

const REPORT = `Running 1s test @ http://127.0.0.1:18089/bad
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   340.22us    0.88ms  13.28ms   93.53%
    Req/Sec    14.20k     7.26k   21.70k    60.00%
  Latency Distribution
     50%  103.00us
     75%  194.00us
     90%  659.00us
     99%    4.07ms
  14098 requests in 1.00s, 1.75MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 98
Requests/sec:  14087.20
Transfer/sec:      1.75MB
`

describe('wrk report', () => {
  it('reads requests, duration, non-2xx answers, socket errors and the median latency', () => {
    assert.deepEqual(parseWrk(REPORT), { requests: 14098, seconds: 1, non2xx: 98, socketErrors: 5, p50Ms: 0.103 })
  })

  it('reads a report without errors as none', () => {
    const clean = REPORT.replace(/^ {2}(Socket errors|Non-2xx).*\n/gm, '')
    assert.deepEqual(parseWrk(clean), { requests: 14098, seconds: 1, non2xx: 0, socketErrors: 0, p50Ms: 0.103 })
  })

  it('converts every unit wrk prints and refuses what it does not know', () => {
    assert.deepEqual(['250.00us', '1.50ms', '2.00s', '1.00m'].map(wrkDurationMs), [0.25, 1.5, 2000, 60_000])
    assert.throws(() => wrkDurationMs('3h'), /unexpected wrk duration/)
    assert.throws(() => parseWrk('wrk: connection refused'), /unexpected wrk output/)
  })
})
