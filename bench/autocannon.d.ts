/** The part of autocannon's API the benchmarks use (the package ships no types). */
declare module 'autocannon' {
  interface Histogram {
    average: number
    mean: number
    p50: number
    p90: number
    p99: number
    max: number
  }
  interface Result {
    requests: Histogram & { total: number }
    latency: Histogram
    errors: number
    timeouts: number
    non2xx: number
    duration: number
    '2xx': number
  }
  interface Options {
    url: string
    connections?: number
    duration?: number
    pipelining?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    workers?: number
    /** A sequence each connection cycles through (path relative to `url`). */
    requests?: { method?: string; path?: string; headers?: Record<string, string>; body?: string }[]
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
