/**
 * The browser side of the IdP: the authorization endpoint (RFC 6749 §4.1 with PKCE S256, OpenID Connect Core
 * §3.1.2), the login pages (password, then the TOTP code for a user under MFA), the consent page and the
 * device verification page (RFC 8628 §3.3). HTTP-free: each step returns a View, a page to show or a place to
 * redirect to; api/idp/pages.ts renders pages. Decisions (docs/idp.md):
 * - an unknown client or a redirect URI that is not registered gets an error page, never a redirect (§4.1.2.1);
 *   every later error redirects with `error`, `error_description`, `state` and `iss` (RFC 9207);
 * - PKCE is required of every client, with S256 only; `plain` is refused;
 * - consent is skipped for the built-in `kubernetes` client, asked every time for the other clients (Dex
 *   does the same with skipApprovalScreen off) and always for a device, whose user must see what they approve;
 * - there is no single sign-on session: every authorization request shows the login page, and prompt=none
 *   answers login_required.
 */
import { AppError } from '../../contracts/errors.js'
import type { Db } from '../storage/store.js'
import { S256_CHALLENGE, type AuthCodes } from './auth-codes.js'
import { MAX_LOGIN_FAILURES, type AuthRequest, type AuthRequests } from './auth-requests.js'
import { userClaims } from './claims.js'
import { isBuiltinClient, type IdpClient, type IdpClients } from './clients.js'
import type { DeviceRequests } from './device-requests.js'
import { checkPassword, checkSecondFactor, type LoginDeps } from './login.js'
import { OOB_URI, redirectUriAllowed } from './redirect-uris.js'
import { parseScopes, scopeProblem } from './scopes.js'

export type Page =
  | { name: 'login'; req: string; client: string; username?: string; error?: string }
  | { name: 'totp'; req: string; error?: string }
  | { name: 'consent'; req: string; client: string; user: string; scopes: string[]; device: boolean }
  | { name: 'oob'; code: string }
  | { name: 'device'; userCode?: string; error?: string }
  | { name: 'device-done'; client: string; approved: boolean }
  | { name: 'error'; title: string; message: string }

export type View = { redirect: string } | { status: number; page: Page }

export interface BrowserFlowDeps {
  db: Db
  clients: IdpClients
  requests: AuthRequests
  codes: AuthCodes
  devices: DeviceRequests
  login: LoginDeps
  issuer: string
  now: () => number
  /** Deletes expired rows now and then (every login started writes one). */
  housekeeping: () => void
}

type Query = Record<string, unknown>

const MAX_STATE = 2048
const MAX_NONCE = 512
/** The login page's username field takes this many characters (its schema counts code points, as this cut does). */
const MAX_LOGIN_HINT = 255

/** The first `max` characters by code point: a cut between two UTF-16 units would leave half a character, which encodeURIComponent refuses. */
const firstCharacters = (text: string, max: number) => Array.from(text).slice(0, max).join('')

const page = (status: number, p: Page): View => ({ status, page: p })
const errorPage = (status: number, title: string, message: string) => page(status, { name: 'error', title, message })
const expired = () =>
  errorPage(400, 'This sign-in has ended', 'It expired, was finished already, or was started in another browser (or with cookies blocked). Go back to the application and sign in again.')

/** A single string value: RFC 6749 §3.1 forbids repeating a parameter. */
function single(query: Query, name: string): string | undefined | null {
  const value = query[name]
  if (value === undefined) return undefined
  return typeof value === 'string' ? value : null
}

const repeated = (q: Query) => Object.keys(q).find((name) => single(q, name) === null)

/** The checks after client and redirect URI are known, in order; a failure redirects with this error. */
const REQUEST_CHECKS: [error: string, failing: (q: Query) => string | undefined][] = [
  ['invalid_request', (q) => (repeated(q) ? `The parameter ${repeated(q)} is repeated.` : undefined)],
  ['request_not_supported', (q) => (q.request !== undefined ? 'The request parameter is not supported.' : undefined)],
  ['request_uri_not_supported', (q) => (q.request_uri !== undefined ? 'The request_uri parameter is not supported.' : undefined)],
  ['unsupported_response_type', (q) => (q.response_type !== 'code' ? `Unsupported response_type ${JSON.stringify(q.response_type ?? '')}: only "code".` : undefined)],
  ['invalid_request', (q) => (q.response_mode !== undefined && q.response_mode !== 'query' ? 'Only response_mode=query is supported.' : undefined)],
  ['invalid_scope', (q) => scopeProblem(parseScopes(q.scope as string | undefined))],
  ['invalid_request', (q) => (q.code_challenge === undefined ? 'PKCE is required: send code_challenge and code_challenge_method=S256.' : undefined)],
  ['invalid_request', (q) => (q.code_challenge_method !== 'S256' ? 'code_challenge_method must be S256 (plain is not accepted).' : undefined)],
  ['invalid_request', (q) => (!S256_CHALLENGE.test(q.code_challenge as string) ? 'code_challenge must be the 43-character base64url SHA-256 of the verifier.' : undefined)],
  ['invalid_request', (q) => (typeof q.state === 'string' && q.state.length > MAX_STATE ? `state has at most ${MAX_STATE} characters.` : undefined)],
  ['invalid_request', (q) => (typeof q.nonce === 'string' && q.nonce.length > MAX_NONCE ? `nonce has at most ${MAX_NONCE} characters.` : undefined)],
  ['login_required', (q) => (typeof q.prompt === 'string' && q.prompt.split(' ').includes('none') ? 'There is no sign-in session: the user must log in.' : undefined)],
]

export class BrowserFlow {
  /** The issuer's path (`/idp`): where the pages are. */
  readonly base: string

  constructor(private readonly deps: BrowserFlowDeps) {
    this.base = new URL(deps.issuer).pathname.replace(/\/$/, '')
  }

  /** GET {issuer}/auth: validates the request and sends the browser to the login page. */
  async authorize(query: Query, browser: string): Promise<View> {
    const clientId = single(query, 'client_id')
    const client = clientId ? await this.deps.clients.get(clientId) : undefined
    if (!client) return errorPage(400, 'Unknown application', 'The application that sent you here is not registered with this cloud (unknown client_id).')
    const redirectUri = single(query, 'redirect_uri')
    if (!redirectUri || !redirectUriAllowed(client.redirectUris, redirectUri)) {
      return errorPage(400, 'Unregistered redirect', `The application asked to return to an address that is not registered for ${client.name} (redirect_uri).`)
    }
    const state = typeof query.state === 'string' ? query.state : null
    for (const [error, failing] of REQUEST_CHECKS) {
      const description = failing(query)
      if (description) return this.answer(redirectUri, { error, error_description: description }, state)
    }
    const id = await this.deps.requests.create(
      {
        clientId: client.id,
        redirectUri,
        scopes: parseScopes(query.scope as string),
        state,
        nonce: (query.nonce as string | undefined) ?? null,
        codeChallenge: query.code_challenge as string,
        deviceRequestId: null,
      },
      browser,
    )
    this.deps.housekeeping()
    const hint = typeof query.login_hint === 'string' ? `&login_hint=${encodeURIComponent(firstCharacters(query.login_hint, MAX_LOGIN_HINT))}` : ''
    return { redirect: `${this.base}/login?req=${id}${hint}` }
  }

  /** GET {issuer}/login: the page of the request's current stage. */
  async show(req: string, browser: string | undefined, loginHint?: string): Promise<View> {
    const request = await this.deps.requests.get(req, browser)
    if (!request) return expired()
    if (request.stage === 'totp') return page(200, { name: 'totp', req })
    if (request.stage === 'consent') return this.consent(request)
    return page(200, { name: 'login', req, client: await this.clientName(request.clientId), username: loginHint })
  }

  /** POST {issuer}/login: the password step. */
  async submitPassword(req: string, browser: string | undefined, username: string, password: string): Promise<View> {
    const request = await this.deps.requests.get(req, browser)
    if (!request || request.stage !== 'login') return expired()
    const retry = async (status: number, error: string) => page(status, { name: 'login', req, client: await this.clientName(request.clientId), username, error })
    if (!username || !password) return retry(400, 'Enter your username and your password.')
    let outcome: { userId: string; needsTotp: boolean }
    try {
      outcome = await checkPassword(this.deps.login, username, password)
    } catch (err) {
      // A refusal (wrong password, locked, disabled, expired) is shown; anything else is a fault, not a failed attempt.
      if (!(err instanceof AppError)) throw err
      if (!(await this.deps.requests.failed(req))) return this.tooManyFailures()
      return retry(401, err.message)
    }
    const user = { userId: outcome.userId, authTime: this.deps.now() }
    if (!(await this.deps.requests.advance(req, 'login', outcome.needsTotp ? 'totp' : 'consent', user))) return expired()
    if (outcome.needsTotp) return page(200, { name: 'totp', req })
    return this.authenticated({ ...request, ...user, stage: 'consent' })
  }

  /** POST {issuer}/login/totp: the second factor. */
  async submitTotp(req: string, browser: string | undefined, code: string): Promise<View> {
    const request = await this.deps.requests.get(req, browser)
    if (!request || request.stage !== 'totp' || !request.userId) return expired()
    const ok = /^\d{6}$/.test(code) && (await checkSecondFactor(this.deps.login, request.userId, code))
    if (!ok) {
      if (!(await this.deps.requests.failed(req))) return this.tooManyFailures()
      return page(401, { name: 'totp', req, error: 'That code is not valid. Enter the current 6-digit code from your authenticator app.' })
    }
    if (!(await this.deps.requests.advance(req, 'totp', 'consent'))) return expired()
    return this.authenticated({ ...request, stage: 'consent' })
  }

  /** POST {issuer}/approval: the user's answer on the consent page. */
  async decide(req: string, browser: string | undefined, approve: boolean): Promise<View> {
    const request = await this.deps.requests.get(req, browser)
    if (!request || request.stage !== 'consent' || !request.userId) return expired()
    if (!(await this.deps.requests.remove(req))) return expired()
    if (request.deviceRequestId) return this.decideDevice(request, approve)
    if (!approve) return this.answer(request.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.' }, request.state)
    return this.issueCode(request)
  }

  /** GET {issuer}/device: the user code form (pre-filled from verification_uri_complete). */
  devicePage(userCode: string | undefined): View {
    return page(200, { name: 'device', userCode: userCode?.slice(0, 32) })
  }

  /** POST {issuer}/device: the user code entered; a valid one starts a login for the device. */
  async submitUserCode(userCode: string, browser: string): Promise<View> {
    const device = userCode ? await this.deps.devices.pending(userCode) : undefined
    if (!device) return page(400, { name: 'device', userCode, error: 'That code is not valid or has expired. Check the code your device shows, or start again on the device.' })
    const id = await this.deps.requests.create(
      { clientId: device.clientId, redirectUri: '', scopes: device.scopes, state: null, nonce: null, codeChallenge: null, deviceRequestId: device.id },
      browser,
    )
    return { redirect: `${this.base}/login?req=${id}` }
  }

  /** After the password (and the code): consent, or the code at once for the built-in client. */
  private async authenticated(request: AuthRequest): Promise<View> {
    if (request.deviceRequestId || !isBuiltinClient(request.clientId)) return this.consent(request)
    if (!(await this.deps.requests.remove(request.id))) return expired()
    return this.issueCode(request)
  }

  private async consent(request: AuthRequest): Promise<View> {
    const user = await this.deps.db.selectFrom('users').select('name').where('id', '=', request.userId!).executeTakeFirst()
    return page(200, { name: 'consent', req: request.id, client: await this.clientName(request.clientId), user: user?.name ?? '', scopes: request.scopes, device: request.deviceRequestId !== null })
  }

  private async issueCode(request: AuthRequest): Promise<View> {
    const claims = await userClaims(this.deps.db, request.userId!)
    if (!claims?.enabled) return errorPage(403, 'Account disabled', 'The account is disabled.')
    const code = await this.deps.codes.issue({
      clientId: request.clientId,
      userId: request.userId!,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      nonce: request.nonce,
      codeChallenge: request.codeChallenge!,
      authTime: request.authTime!,
      passwordStamp: claims.passwordStamp,
    })
    if (request.redirectUri === OOB_URI) return page(200, { name: 'oob', code })
    return this.answer(request.redirectUri, { code }, request.state)
  }

  private async decideDevice(request: AuthRequest, approve: boolean): Promise<View> {
    const client = await this.clientName(request.clientId)
    const claims = approve ? await userClaims(this.deps.db, request.userId!) : undefined
    if (approve && !claims?.enabled) return errorPage(403, 'Account disabled', 'The account is disabled.')
    const decision = claims ? { userId: request.userId!, authTime: request.authTime!, passwordStamp: claims.passwordStamp } : 'denied'
    if (!(await this.deps.devices.decide(request.deviceRequestId!, decision))) return expired()
    return page(200, { name: 'device-done', client, approved: approve })
  }

  /** The redirect back to the client with the answer (RFC 6749 §4.1.2), or a page for the out-of-band URI. */
  private answer(redirectUri: string, params: Record<string, string>, state: string | null): View {
    if (redirectUri === OOB_URI || redirectUri === '') return errorPage(400, 'Sign-in failed', params.error_description ?? params.error)
    const url = new URL(redirectUri)
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    if (state !== null) url.searchParams.set('state', state)
    url.searchParams.set('iss', this.deps.issuer)
    return { redirect: url.toString() }
  }

  private tooManyFailures(): View {
    return errorPage(401, 'Too many attempts', `This sign-in ended after ${MAX_LOGIN_FAILURES} failed attempts. Go back to the application and start again.`)
  }

  private async clientName(clientId: string): Promise<string> {
    const client: IdpClient | undefined = await this.deps.clients.get(clientId)
    return client?.name ?? clientId
  }
}
