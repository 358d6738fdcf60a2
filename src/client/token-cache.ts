/**
 * Tokens kept between pcctl runs, so a command does not log in (a password hash on the server, ~100 ms) when a
 * token of the same account is still valid, as kubectl keeps its tokens. One file per account in a 0700
 * folder, 0600, never a password. The file name is a keyed hash of the account (URL, user, project, domains)
 * and its password, under a random key kept in the same folder: a changed password misses the old token, and
 * the name does not give away the password to anyone who cannot read the folder anyway. A token is used only
 * while it has more than a few minutes left; one the server refuses is dropped and the session logs in again.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PasswordAuth, TokenInfo } from './session.js'

/** Tokens closer to their expiry than this are not reused (a long command must not run out mid-way). */
const MIN_LEFT_MS = 5 * 60_000

export interface TokenCache {
  read(auth: PasswordAuth): TokenInfo | undefined
  write(auth: PasswordAuth, token: TokenInfo): void
  forget(auth: PasswordAuth): void
}

export function fileTokenCache(dir: string): TokenCache {
  let key: Buffer | undefined
  const secret = (): Buffer => {
    if (key) return key
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    chmodSync(dir, 0o700)
    const file = join(dir, 'key')
    try {
      key = readFileSync(file)
    } catch {
      key = randomBytes(32)
      writeFileSync(file, key, { mode: 0o600 })
    }
    return key
  }
  const fileOf = (a: PasswordAuth) => {
    const account = JSON.stringify([a.authUrl, a.username, a.userDomain, a.projectId, a.projectName, a.projectDomain, a.password])
    return join(dir, `${createHmac('sha256', secret()).update(account).digest('hex')}.json`)
  }
  return {
    read(auth) {
      try {
        const token = JSON.parse(readFileSync(fileOf(auth), 'utf8')) as TokenInfo
        return Date.parse(token.expires_at) - Date.now() > MIN_LEFT_MS ? token : undefined
      } catch {
        return undefined
      }
    },
    write(auth, token) {
      try {
        writeFileSync(fileOf(auth), JSON.stringify(token), { mode: 0o600 })
      } catch {
        // A cache that cannot be written only costs the next command a login.
      }
    },
    forget(auth) {
      rmSync(fileOf(auth), { force: true })
    },
  }
}
