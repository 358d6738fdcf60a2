/**
 * pcctl's saved account settings: <configDir>/config.json, mode 0600 in a 0700 folder. The password is
 * encrypted (AES-256-GCM) with a key kept in <configDir>/key (0600), so the JSON file alone, copied or
 * printed, does not reveal it; `config get` never prints it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface CliConfig {
  accountUrl: string
  username: string
  /** Sealed; use openPassword(). */
  password: string
  region: string
  tenant: string
  proxyUrl?: string
  privatePackageRepo?: string
  insecure?: boolean
}

export const CONFIG_DEFAULTS = { region: 'RegionOne', tenant: 'admin' }

function keyFile(dir: string): string {
  return join(dir, 'key')
}

function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(dir, 0o700)
}

function loadKey(dir: string): Buffer {
  const file = keyFile(dir)
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')
  ensureDir(dir)
  const key = randomBytes(32)
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 })
  return key
}

export function sealPassword(dir: string, password: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', loadKey(dir), iv)
  const body = Buffer.concat([cipher.update(password, 'utf8'), cipher.final()])
  return 'enc:' + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')
}

export function openPassword(dir: string, sealed: string): string {
  if (!sealed.startsWith('enc:')) throw new Error('the saved password is not readable: run `pcctl config set` again')
  const raw = Buffer.from(sealed.slice(4), 'base64')
  try {
    const decipher = createDecipheriv('aes-256-gcm', loadKey(dir), raw.subarray(0, 12))
    decipher.setAuthTag(raw.subarray(12, 28))
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
  } catch {
    throw new Error('the saved password cannot be decrypted (the key file changed): run `pcctl config set` again')
  }
}

export function configPath(dir: string): string {
  return join(dir, 'config.json')
}

export function readConfig(dir: string): CliConfig | undefined {
  const file = configPath(dir)
  if (!existsSync(file)) return undefined
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as CliConfig
  } catch {
    throw new Error(`${file} is not valid JSON: run \`pcctl config set\` to write it again`)
  }
}

export function writeConfig(dir: string, config: CliConfig): void {
  ensureDir(dir)
  const file = configPath(dir)
  writeFileSync(file, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 })
  chmodSync(file, 0o600)
}
