/**
 * A 1 GiB image upload streams: the server process (a child of this test) grows by less than 128 MiB resident while
 * it receives, hashes and stores the bytes, and the stored image has exactly the size and checksum sent.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const GIB = 1024 ** 3
/** A buffered upload would add the whole GiB; a streamed one adds its buffers and the garbage collector's slack. */
const GROWTH_LIMIT_BYTES = 128 * 1024 * 1024

function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) * 1024 : 0
}

describe('image upload memory', () => {
  it('stores a 1 GiB upload adding under 128 MiB to the server resident memory', { timeout: 240_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pcc-upload-'))
    const script = fileURLToPath(new URL('./fixtures/serve-child.js', import.meta.url))
    const child = spawn(process.execPath, [script], { env: { PATH: process.env.PATH, PCC_DATA_DIR: dataDir, PCC_IMAGE_MAX_BYTES: String(2 * GIB) }, stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve)
        child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
      })
      const { url, token, pid } = JSON.parse(line) as { url: string; token: string; pid: number }
      const created = await fetch(`${url}/image/v2/images`, {
        method: 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'big', disk_format: 'raw', container_format: 'bare' }),
      })
      const image = (await created.json()) as { id: string }

      const before = rssBytes(pid)
      let peak = before
      const sampler = setInterval(() => {
        peak = Math.max(peak, rssBytes(pid))
      }, 25)
      // The same random MiB, 1024 times: cheap to make, and the checksum still covers every byte.
      const chunk = randomBytes(1024 * 1024)
      const md5 = createHash('md5')
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${url}/image/v2/images/${image.id}/file`, {
          method: 'PUT',
          headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream', 'content-length': String(GIB) },
        })
        req.on('response', (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        })
        req.on('error', reject)
        let sent = 0
        const pump = () => {
          while (sent < GIB) {
            sent += chunk.length
            md5.update(chunk)
            if (!req.write(chunk)) return void req.once('drain', pump)
          }
          req.end()
        }
        pump()
      })
      clearInterval(sampler)
      peak = Math.max(peak, rssBytes(pid))
      assert.equal(status, 204)
      const shown = (await (await fetch(`${url}/image/v2/images/${image.id}`, { headers: { 'x-auth-token': token } })).json()) as { status: string; size: number; checksum: string }
      assert.equal(shown.status, 'active')
      assert.equal(shown.size, GIB)
      assert.equal(shown.checksum, md5.digest('hex'))
      // What the upload adds to the server, whatever the server holds already (it grows with every API it serves).
      const added = peak - before
      assert.ok(added < GROWTH_LIMIT_BYTES, `the upload added ${(added / 1048576).toFixed(1)} MiB of resident memory (from ${(before / 1048576).toFixed(1)} MiB), not under ${GROWTH_LIMIT_BYTES / 1048576} MiB`)
      console.log(`# 1 GiB upload: server RSS ${(before / 1048576).toFixed(1)} MiB before, peak ${(peak / 1048576).toFixed(1)} MiB`)
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
