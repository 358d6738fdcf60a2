/**
 * The IdP's pages for browsers under {base}/idp: the authorization endpoint (/auth), the login pages
 * (/login, /login/totp), consent (/approval) and device verification (/device). Thin: each route hands the
 * query or form to oidc/browser-flow.ts and renders the View it returns (pages.ts) or redirects (303).
 *
 * A browser is recognised by the `pcc_idp_browser` cookie (random, HttpOnly, SameSite=Lax, Secure over https),
 * set where a login starts (/auth, the device code form); each login answers only the browser that started it.
 * Pages are never cached or framed, send no Referer (their URLs carry request ids) and load nothing but the
 * stylesheet.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppDeps } from '../../deps.js'
import { cookieValue } from '../../http/cookies.js'
import { toPublicError } from '../../http/api-family.js'
import type { View } from '../../oidc/browser-flow.js'
import { randomToken } from '../../oidc/random-tokens.js'
import { renderPage, STYLESHEET } from './pages.js'
import { mediaAnswer, noBody } from '../../http/openapi.js'

const BROWSER_COOKIE = 'pcc_idp_browser'

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // No form-action: the approval's 303 goes to the client's redirect URI, which form-action would block.
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
}

const str = (max: number) => ({ type: 'string', maxLength: max })
const form = (properties: Record<string, object>, required: string[]) => ({ type: 'object', properties, required })
const REQ = str(64)

/** The browser's cookie, as its login requests know it (undefined: none). */
const browserCookie = (request: FastifyRequest) => cookieValue(request.headers.cookie, BROWSER_COOKIE)

export function idpBrowserRoutes(deps: AppDeps) {
  const flow = deps.idp.browser
  const base = flow.base
  const secure = deps.urls.idp.startsWith('https:')

  const send = (reply: FastifyReply, view: View) => {
    if ('redirect' in view) return reply.code(303).header('cache-control', 'no-store').header('location', view.redirect).send()
    return reply.code(view.status).headers(PAGE_HEADERS).send(renderPage(base, view.page))
  }
  /** The browser's cookie, set now when it has none (a login starts here). */
  const browserOf = (request: FastifyRequest, reply: FastifyReply): string => {
    const existing = browserCookie(request)
    if (existing && existing.length <= 64) return existing
    const value = randomToken()
    reply.header('set-cookie', `${BROWSER_COOKIE}=${value}; Path=${base || '/'}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`)
    return value
  }
  /** Errors of page routes (bad input, the unexpected) are pages too, not JSON. */
  const errorHandler = (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const error = toPublicError(err, request)
    return send(reply, { status: error.status, page: { name: 'error', title: 'Something went wrong', message: error.message } })
  }
  // Pages for browsers: open, answered with a page or a redirect, and their errors are pages too.
  const pageAnswers = { 200: mediaAnswer('text/html', 'A page'), 303: noBody('See Other: the next step'), '4XX': mediaAnswer('text/html', 'An error page'), '5XX': mediaAnswer('text/html', 'An error page') }
  const options = (schema: object, summary = '') => ({ schema: { tags: ['idp'], summary, security: [], response: pageAnswers, ...schema }, errorHandler })

  return async (scope: FastifyInstance): Promise<void> => {
    scope.get('/static/style.css', { schema: { tags: ['idp'], summary: "The pages' stylesheet", security: [], response: { 200: mediaAnswer('text/css', 'The stylesheet') } } }, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(STYLESHEET),
    )

    scope.get<{ Querystring: Record<string, unknown> }>('/auth', options({}, 'The authorization endpoint (OpenID Connect Core §3.1.2): starts a login'), async (request, reply) => send(reply, await flow.authorize(request.query, browserOf(request, reply))))

    scope.get<{ Querystring: { req: string; login_hint?: string } }>('/login', options({ querystring: form({ req: REQ, login_hint: str(255) }, ['req']) }, 'The login page'), async (request, reply) =>
      send(reply, await flow.show(request.query.req, browserCookie(request), request.query.login_hint)),
    )

    scope.post<{ Body: { req: string; username?: string; password?: string } }>(
      '/login',
      options({ consumes: ['application/x-www-form-urlencoded'], body: form({ req: REQ, username: str(255), password: str(4096) }, ['req']) }, 'Log in with a user name and password'),
      async (request, reply) => send(reply, await flow.submitPassword(request.body.req, browserCookie(request), request.body.username ?? '', request.body.password ?? '')),
    )

    scope.post<{ Body: { req: string; totp?: string } }>('/login/totp', options({ consumes: ['application/x-www-form-urlencoded'], body: form({ req: REQ, totp: str(16) }, ['req']) }, 'The second factor: a TOTP code'), async (request, reply) =>
      send(reply, await flow.submitTotp(request.body.req, browserCookie(request), (request.body.totp ?? '').trim())),
    )

    scope.post<{ Body: { req: string; approval?: string } }>('/approval', options({ consumes: ['application/x-www-form-urlencoded'], body: form({ req: REQ, approval: str(16) }, ['req']) }, 'Approve or deny a client'), async (request, reply) =>
      send(reply, await flow.decide(request.body.req, browserCookie(request), request.body.approval === 'approve')),
    )

    scope.get<{ Querystring: { user_code?: string } }>('/device', options({ querystring: form({ user_code: str(64) }, []) }, 'Device verification: the page to enter a user code'), async (request, reply) =>
      send(reply, flow.devicePage(request.query.user_code)),
    )

    scope.post<{ Body: { user_code?: string } }>('/device', options({ consumes: ['application/x-www-form-urlencoded'], body: form({ user_code: str(64) }, []) }, 'Device verification: submit a user code'), async (request, reply) =>
      send(reply, await flow.submitUserCode(request.body.user_code ?? '', browserOf(request, reply))),
    )
  }
}
