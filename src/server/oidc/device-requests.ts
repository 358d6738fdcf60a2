/**
 * The device authorization grant (RFC 8628), as Dex has it: a device asks for a device code and a user code,
 * shows the user code, and polls the token endpoint; the user enters the code at {issuer}/device, logs in and
 * approves (or denies). Both codes are stored as SHA-256 hashes. A poll sooner than the request's interval
 * answers `slow_down` and raises the interval by 5 s (§3.5); a request lives DEVICE_TTL_MS (Dex's 5 minutes).
 */
import { randomInt } from 'node:crypto'
import { AppError } from '../../contracts/errors.js'
import { isUniqueViolation } from '../storage/errors.js'
import type { IdpDeviceRequestTable } from '../storage/schema.js'
import type { Store } from '../storage/store.js'
import { randomId, randomToken, tokenHash } from './random-tokens.js'

export const DEVICE_TTL_MS = 5 * 60_000
export const DEVICE_INTERVAL_SECONDS = 5
const SLOW_DOWN_STEP_SECONDS = 5

/** RFC 8628 §6.1: 20 consonants without vowels (no words), 8 characters ≈ 34.5 bits, shown as XXXX-XXXX. */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
const USER_CODE_LENGTH = 8

export interface DeviceAuthorization {
  deviceCode: string
  userCode: string
  expiresIn: number
  interval: number
}

export interface PendingDevice {
  id: string
  clientId: string
  scopes: string[]
}

export interface DeviceGrant {
  clientId: string
  userId: string
  scopes: string[]
  authTime: number
  passwordStamp: number | null
}

const oauthError = (type: string, message: string) => new AppError('bad_request', message, { type })

function newUserCode(): string {
  let code = ''
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/** What the user typed, as stored: upper case, without dashes and spaces (§6.1: case-insensitive, punctuation ignored). */
export const normaliseUserCode = (typed: string) => typed.toUpperCase().replace(/[\s-]/g, '')

/** The poll's answer by status, once the request is known, unexpired and polled at the right pace. */
const POLL_ANSWERS: Record<string, (() => AppError) | undefined> = {
  pending: () => oauthError('authorization_pending', 'The user has not yet approved the request.'),
  denied: () => oauthError('access_denied', 'The user denied the request.'),
  done: () => oauthError('invalid_grant', 'The device code was already used.'),
  approved: undefined,
}

export class DeviceRequests {
  constructor(
    private readonly store: Store,
    private readonly options: { now?: () => number } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)()
  }

  /** A new request (the device authorization endpoint). */
  async create(clientId: string, scopes: string[]): Promise<DeviceAuthorization> {
    const deviceCode = randomToken()
    const now = this.now()
    for (;;) {
      const userCode = newUserCode()
      try {
        await this.store.db
          .insertInto('idp_device_requests')
          .values({
            id: randomId(),
            device_code_hash: tokenHash(deviceCode),
            user_code_hash: tokenHash(normaliseUserCode(userCode)),
            client_id: clientId,
            scopes: scopes.join(' '),
            status: 'pending',
            user_id: null,
            auth_time: null,
            password_stamp: null,
            interval_seconds: DEVICE_INTERVAL_SECONDS,
            last_polled_at: null,
            created_at: now,
            expires_at: now + DEVICE_TTL_MS,
          })
          .execute()
        return { deviceCode, userCode, expiresIn: DEVICE_TTL_MS / 1000, interval: DEVICE_INTERVAL_SECONDS }
      } catch (err) {
        // Two live requests drew the same user code (one chance in billions): draw again.
        if (!isUniqueViolation(err)) throw err
      }
    }
  }

  /** The pending, unexpired request a user code names, for the verification page. */
  async pending(userCode: string): Promise<PendingDevice | undefined> {
    const row = await this.store.db
      .selectFrom('idp_device_requests')
      .select(['id', 'client_id', 'scopes'])
      .where('user_code_hash', '=', tokenHash(normaliseUserCode(userCode)))
      .where('status', '=', 'pending')
      .where('expires_at', '>', this.now())
      .executeTakeFirst()
    return row && { id: row.id, clientId: row.client_id, scopes: row.scopes.split(' ').filter(Boolean) }
  }

  /** The user's decision; false when the request is no longer pending (expired, decided in another tab). */
  async decide(id: string, decision: { userId: string; authTime: number; passwordStamp: number | null } | 'denied'): Promise<boolean> {
    const set =
      decision === 'denied'
        ? { status: 'denied' }
        : { status: 'approved', user_id: decision.userId, auth_time: decision.authTime, password_stamp: decision.passwordStamp }
    const result = await this.store.db.updateTable('idp_device_requests').set(set).where('id', '=', id).where('status', '=', 'pending').where('expires_at', '>', this.now()).executeTakeFirst()
    return Number(result.numUpdatedRows) === 1
  }

  /** A poll of the token endpoint: the approved grant once, else the RFC 8628 §3.5 error. */
  async poll(deviceCode: string | undefined, clientId: string): Promise<DeviceGrant> {
    if (!deviceCode) throw oauthError('invalid_request', 'Required param: device_code.')
    const db = this.store.db
    const now = this.now()
    const row = await db.selectFrom('idp_device_requests').selectAll().where('device_code_hash', '=', tokenHash(deviceCode)).executeTakeFirst()
    if (!row || row.client_id !== clientId) throw oauthError('invalid_grant', 'The device code is invalid.')
    if (row.expires_at <= now) throw oauthError('expired_token', 'The device code has expired; start again.')
    if (row.last_polled_at !== null && now - row.last_polled_at < row.interval_seconds * 1000) {
      const interval = row.interval_seconds + SLOW_DOWN_STEP_SECONDS
      await db.updateTable('idp_device_requests').set({ interval_seconds: interval, last_polled_at: now }).where('id', '=', row.id).execute()
      throw oauthError('slow_down', `Polling too fast: wait at least ${interval} seconds between requests.`)
    }
    await db.updateTable('idp_device_requests').set({ last_polled_at: now }).where('id', '=', row.id).execute()
    const answer = POLL_ANSWERS[row.status]
    if (answer) throw answer()
    // Approved: the first poll to mark it done takes the tokens.
    const taken = await db.updateTable('idp_device_requests').set({ status: 'done' }).where('id', '=', row.id).where('status', '=', 'approved').executeTakeFirst()
    if (Number(taken.numUpdatedRows) !== 1) throw POLL_ANSWERS.done!()
    return grantOf(row)
  }

  async purge(): Promise<void> {
    await this.store.db.deleteFrom('idp_device_requests').where('expires_at', '<=', this.now()).execute()
  }
}

function grantOf(row: IdpDeviceRequestTable): DeviceGrant {
  return { clientId: row.client_id, userId: row.user_id!, scopes: row.scopes.split(' ').filter(Boolean), authTime: row.auth_time!, passwordStamp: row.password_stamp }
}
