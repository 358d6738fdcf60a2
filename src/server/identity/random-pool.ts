/**
 * Random bytes for token IVs and audit ids, taken from a pooled CSPRNG buffer: one randomFillSync per 256
 * draws instead of one per token, which shows on the token-issue path.
 */
import { randomFillSync } from 'node:crypto'

const POOL = Buffer.alloc(4096)
let offset = POOL.length

export function pooledRandom(size: number): Buffer {
  if (offset + size > POOL.length) {
    randomFillSync(POOL)
    offset = 0
  }
  // A copy: the pool is refilled in place later.
  const out = Buffer.from(POOL.subarray(offset, offset + size))
  offset += size
  return out
}
