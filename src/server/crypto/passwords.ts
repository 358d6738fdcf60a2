/**
 * Password hashing with scrypt (memory-hard, in Node's own crypto, so nothing native to build). Hashes carry
 * their parameters, so a change of cost applies to new hashes and `needsRehash` tells login to upgrade old ones.
 * Format: scrypt$N$r$p$salt$hash (base64url).
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto'

export interface ScryptCost {
  N: number
  r: number
  p: number
}

/** 2^15 × 8 × 1 uses 32 MiB and about 50–100 ms per hash on the 2-core machine (see docs/benchmarks.md). */
export const DEFAULT_COST: ScryptCost = { N: 2 ** 15, r: 8, p: 1 }
const KEY_LENGTH = 32

function scrypt(password: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r }
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  )
}

export async function hashPassword(password: string, cost: ScryptCost = DEFAULT_COST): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, cost)
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

function parse(hash: string): { cost: ScryptCost; salt: Buffer; key: Buffer } | undefined {
  const parts = hash.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined
  return {
    cost: { N: Number(parts[1]), r: Number(parts[2]), p: Number(parts[3]) },
    salt: Buffer.from(parts[4], 'base64url'),
    key: Buffer.from(parts[5], 'base64url'),
  }
}

/** Constant-time check of a password against a stored hash; false for a malformed hash. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const parsed = parse(hash)
  if (!parsed) return false
  const key = await scrypt(password, parsed.salt, parsed.cost)
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key)
}

export function needsRehash(hash: string, cost: ScryptCost = DEFAULT_COST): boolean {
  const parsed = parse(hash)
  return !parsed || parsed.cost.N !== cost.N || parsed.cost.r !== cost.r || parsed.cost.p !== cost.p
}
