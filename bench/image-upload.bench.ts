/**
 * Image data throughput: one 256 MiB upload (streamed to the blob store, MD5 and SHA-512 computed on the way)
 * and its download, against a server on 127.0.0.1 with a temp SQLite data dir. Bounded by the data size.
 */
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import type { BenchRow, BenchRun } from './harness.js'
import { startTestServer } from '../src/testkit/harness.js'

const SIZE = 256 * 1024 * 1024

export const run: BenchRun = async () => {
  const server = await startTestServer()
  try {
    const { adminUserId: userId, adminProjectId: projectId } = server.bootstrap
    const { token } = await server.deps.tokens.issue({ userId, methods: ['password'], scope: { p: projectId } })
    const created = await fetch(`${server.url}/image/v2/images`, {
      method: 'POST',
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', disk_format: 'raw', container_format: 'bare' }),
    })
    const { id } = (await created.json()) as { id: string }
    const chunk = randomBytes(1 << 20)
    const upStart = performance.now()
    await new Promise<void>((resolve, reject) => {
      const req = request(`${server.url}/image/v2/images/${id}/file`, {
        method: 'PUT',
        headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream', 'content-length': String(SIZE) },
      })
      req.on('response', (res) => {
        res.resume()
        if (res.statusCode === 204) resolve()
        else reject(new Error(`upload answered ${res.statusCode}`))
      })
      req.on('error', reject)
      let sent = 0
      const pump = () => {
        while (sent < SIZE) {
          sent += chunk.length
          if (!req.write(chunk)) return void req.once('drain', pump)
        }
        req.end()
      }
      pump()
    })
    const upSeconds = (performance.now() - upStart) / 1000
    const downStart = performance.now()
    const res = await fetch(`${server.url}/image/v2/images/${id}/file`, { headers: { 'x-auth-token': token } })
    let received = 0
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) received += part.length
    const downSeconds = (performance.now() - downStart) / 1000
    if (received !== SIZE) throw new Error(`downloaded ${received} bytes, expected ${SIZE}`)
    const mib = SIZE / (1 << 20)
    const rows: BenchRow[] = [
      { figure: 'image upload 256 MiB (MD5 + SHA-512, to disk)', value: Math.round(mib / upSeconds), unit: 'MiB/s' },
      { figure: 'image download 256 MiB', value: Math.round(mib / downSeconds), unit: 'MiB/s' },
    ]
    return rows
  } finally {
    await server.close()
  }
}
