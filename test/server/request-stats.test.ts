/** The request figures of /metrics, tallied by hand: Prometheus' histogram rules and label escaping. */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { RequestStats } from '../../src/server/http/metrics.js'

const line = (text: string, prefix: string) => text.split('\n').find((l) => l.startsWith(prefix))

describe('request stats exposition', () => {
  it('counts per route, method and status; buckets are cumulative and a value on a bound falls in it (le)', () => {
    const stats = new RequestStats()
    for (const seconds of [0.0005, 0.001, 0.003, 0.2, 9]) stats.record('/v3/auth/tokens', 'GET', 200, seconds)
    stats.record('/v3/auth/tokens', 'GET', 404, 0.002)
    stats.record('/v3/auth/tokens', 'HEAD', 200, 0.002)
    const text = stats.exposition()
    assert.equal(line(text, 'pcc_http_requests_total{route="/v3/auth/tokens",method="HEAD",status="200"}'), 'pcc_http_requests_total{route="/v3/auth/tokens",method="HEAD",status="200"} 1')
    const labels = 'route="/v3/auth/tokens",method="GET",status="200"'
    assert.equal(line(text, `pcc_http_requests_total{${labels}}`), `pcc_http_requests_total{${labels}} 5`)
    assert.equal(line(text, 'pcc_http_requests_total{route="/v3/auth/tokens",method="GET",status="404"}'), 'pcc_http_requests_total{route="/v3/auth/tokens",method="GET",status="404"} 1')
    const bucket = (le: string) => Number(line(text, `pcc_http_request_duration_seconds_bucket{le="${le}",${labels}}`)?.split(' ')[1])
    assert.deepEqual(['0.001', '0.0025', '0.005', '0.25', '5', '+Inf'].map(bucket), [2, 2, 3, 4, 4, 5])
    assert.equal(line(text, `pcc_http_request_duration_seconds_count{${labels}}`), `pcc_http_request_duration_seconds_count{${labels}} 5`)
    const sum = Number(line(text, `pcc_http_request_duration_seconds_sum{${labels}}`)?.split(' ')[1])
    assert.ok(Math.abs(sum - 9.2045) < 1e-9, String(sum))
    assert.match(text, /^# TYPE pcc_http_requests_total counter$/m)
    assert.match(text, /^# TYPE pcc_http_request_duration_seconds histogram$/m)
  })

  it('escapes backslashes, quotes and newlines in label values', () => {
    const stats = new RequestStats()
    stats.record('/a"b\\c\nd', 'GET', 200, 0.01)
    assert.match(stats.exposition(), /^pcc_http_requests_total\{route="\/a\\"b\\\\c\\nd",method="GET",status="200"\} 1$/m)
  })
})
