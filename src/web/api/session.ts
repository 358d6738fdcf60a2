/**
 * The signed-in user: login with password (and TOTP through Keystone's auth receipt when the user has MFA),
 * the project-scoped token, switching project (rescoping the token) and logout (revoking it). The token is kept
 * in localStorage so tabs share it; every tab drops it on logout or when an API call says it is no longer valid.
 */
import { ApiError, call, setAuth } from './http'

export interface Named {
  id: string
  name: string
}
export interface CatalogEntry {
  type: string
  name: string
  endpoints: { interface: string; region: string; url: string }[]
}
export interface Session {
  token: string
  expiresAt: string
  user: Named & { domain: Named }
  project: Named & { domain: Named }
  roles: string[]
  catalog: CatalogEntry[]
}

interface TokenBody {
  token: {
    expires_at: string
    user: Named & { domain: Named }
    project?: Named & { domain: Named }
    roles?: Named[]
    catalog?: CatalogEntry[]
  }
}

const KEY = 'pcc.session'
const LAST_PROJECT = 'pcc.lastProject'
let current: Session | undefined = load()
let endedReason: string | undefined
const listeners = new Set<() => void>()

function load(): Session | undefined {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null
    return saved && Date.parse(saved.expiresAt) > Date.now() ? saved : undefined
  } catch {
    return undefined
  }
}

function set(session: Session | undefined, reason?: string): void {
  current = session
  endedReason = reason
  if (session) {
    localStorage.setItem(KEY, JSON.stringify(session))
    localStorage.setItem(LAST_PROJECT, session.project.id)
  } else localStorage.removeItem(KEY)
  for (const listener of listeners) listener()
}

export function session(): Session | undefined {
  return current
}
export function sessionEndedReason(): string | undefined {
  return endedReason
}
export function isAdmin(): boolean {
  return current?.roles.includes('admin') ?? false
}
export function subscribe(listener: () => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

setAuth({ token: () => current?.token, expired: () => set(undefined, 'Your session ended (the token expired or was revoked). Log in again.') })
// Another tab logged in, switched project or logged out.
addEventListener('storage', (event) => {
  if (event.key === KEY) {
    current = load()
    for (const listener of listeners) listener()
  }
})

export interface Credentials {
  username: string
  password: string
  domain: string
}

/** A login that needs a second factor: the receipt to send with the TOTP code. */
export interface Receipt {
  receipt: string
  userId: string
  methods: string[][]
}

function toSession(token: string, body: TokenBody): Session | undefined {
  const t = body.token
  if (!t.project) return undefined
  return { token, expiresAt: t.expires_at, user: t.user, project: t.project, roles: (t.roles ?? []).map((r) => r.name), catalog: t.catalog ?? [] }
}

async function issue(auth: unknown, receipt?: string) {
  const headers: Record<string, string> = receipt ? { 'Openstack-Auth-Receipt': receipt } : {}
  const response = await call<TokenBody>('identity', '/auth/tokens', { method: 'POST', body: { auth }, headers, anonymous: true })
  return { token: response.headers.get('x-subject-token')!, body: response.body }
}

/** Scopes a fresh token to a project: the one used last when the user still has it, else the first. */
async function scoped(token: string, body: TokenBody): Promise<Session> {
  const direct = toSession(token, body)
  const preferred = localStorage.getItem(LAST_PROJECT)
  if (direct && (!preferred || direct.project.id === preferred)) return direct
  const projects = await listProjectsWith(token)
  if (projects.length === 0) {
    if (direct) return direct
    throw new ApiError(403, 'You have no role on any project. Ask an administrator to give you a role on a project.')
  }
  const target = projects.find((p) => p.id === preferred) ?? projects.find((p) => p.id === direct?.project.id) ?? projects[0]
  return rescopeWith(token, target.id)
}

async function listProjectsWith(token: string): Promise<Named[]> {
  const response = await call<{ projects: (Named & { enabled: boolean })[] }>('identity', '/auth/projects', { headers: { 'X-Auth-Token': token }, anonymous: true })
  return response.body.projects.filter((p) => p.enabled !== false).sort((a, b) => a.name.localeCompare(b.name))
}

async function rescopeWith(token: string, projectId: string): Promise<Session> {
  const issued = await issue({ identity: { methods: ['token'], token: { id: token } }, scope: { project: { id: projectId } } })
  return toSession(issued.token, issued.body)!
}

/**
 * Password login. Answers a Receipt when the user's MFA rules need more (Keystone's 401 with
 * Openstack-Auth-Receipt); then call `loginWithTotp`.
 */
export async function login(credentials: Credentials): Promise<Receipt | undefined> {
  const identity = { methods: ['password'], password: { user: { name: credentials.username, domain: { name: credentials.domain || 'Default' }, password: credentials.password } } }
  try {
    const issued = await issue({ identity })
    set(await scoped(issued.token, issued.body))
    return undefined
  } catch (err) {
    const response = (err as { response?: Response }).response
    const receipt = response?.headers.get('openstack-auth-receipt')
    if (!receipt && err instanceof ApiError && err.status === 401) {
      // A locked account says so, and until when, also to the user who typed the right password.
      const locked = /is locked for user: \S+ (until .+)\.$/.exec(err.message)
      if (locked) throw new ApiError(401, `This account is locked ${locked[1]}.`, err.requestId, 'Too many failed logins: wait until then, or ask an administrator to unlock it.')
      throw new ApiError(401, 'The user name, password or domain is not right.', err.requestId, 'Check them and try again: repeated failed logins may lock the account for a while.')
    }
    if (!receipt) throw err
    const body = (err as { body?: { receipt?: { user?: { id: string } }; required_auth_methods?: string[][] } }).body
    return { receipt, userId: body?.receipt?.user?.id ?? '', methods: body?.required_auth_methods ?? [] }
  }
}

export async function loginWithTotp(receipt: Receipt, passcode: string): Promise<void> {
  let issued
  try {
    issued = await issue({ identity: { methods: ['totp'], totp: { user: { id: receipt.userId, passcode } } } }, receipt.receipt)
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      throw new ApiError(401, 'The code was not accepted.', err.requestId, 'Enter the code your authenticator app shows now (it changes every 30 seconds). After 5 minutes, log in again from the start.')
    }
    throw err
  }
  set(await scoped(issued.token, issued.body))
}

export async function listProjects(): Promise<Named[]> {
  return listProjectsWith(current!.token)
}

export async function switchProject(projectId: string): Promise<void> {
  set(await rescopeWith(current!.token, projectId))
}

export async function logout(): Promise<void> {
  const token = current?.token
  set(undefined)
  if (token) await call('identity', '/auth/tokens', { method: 'DELETE', headers: { 'X-Auth-Token': token, 'X-Subject-Token': token }, anonymous: true }).catch(() => {})
}
