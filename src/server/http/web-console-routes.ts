/**
 * The web console's static files (built by scripts/build-web.mjs into dist/web/): `GET /` is the app,
 * `/assets/<name>-<hash>.<ext>` its code and styles, `/console/vnc.html` the noVNC viewer that console URLs open.
 * The files are read once at start (a few hundred KB) with their pre-compressed copies; each answer picks Brotli,
 * gzip or the plain bytes from Accept-Encoding. Hashed assets never change under a name (immutable for a year);
 * the HTML pages are revalidated on every load (no-cache + ETag), so a new release is picked up at once.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { extname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { renderPlainError } from './error-renderers.js'
import { mediaAnswer, noBody, type JsonSchema } from './openapi.js'

const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url))

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
}

/** What a page may load and where it may connect: only this origin (the APIs, the remote-console websocket). */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
}

interface StaticFile {
  type: string
  etag: string
  plain: Buffer
  br?: Buffer
  gzip?: Buffer
  immutable: boolean
}

function readOptional(path: string): Buffer | undefined {
  return existsSync(path) ? readFileSync(path) : undefined
}

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? listFiles(path) : [path]
  })
}

/** The built web console, keyed by URL path below the base (`index.html`, `assets/app-XYZ.js`…). */
export function loadWebConsole(dir = WEB_DIR): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>()
  if (!existsSync(dir)) return files
  for (const path of listFiles(dir)) {
    const ext = extname(path)
    if (!TYPES[ext]) continue // .br / .gz copies are read with their file
    const plain = readFileSync(path)
    const name = relative(dir, path).split('\\').join('/')
    files.set(name, {
      type: TYPES[ext],
      etag: `"${createHash('sha256').update(plain).digest('base64url').slice(0, 22)}"`,
      plain,
      br: readOptional(`${path}.br`),
      gzip: readOptional(`${path}.gz`),
      immutable: name.startsWith('assets/'),
    })
  }
  return files
}

/** The encoding to send: Brotli when accepted, then gzip (q=0 refuses one), else none. */
export function chooseEncoding(acceptEncoding: string | undefined, file: StaticFile): 'br' | 'gzip' | undefined {
  if (!acceptEncoding) return undefined
  const accepted = new Set(
    acceptEncoding
      .split(',')
      .map((part) => part.trim().split(';'))
      .filter(([, q]) => !q || !/^q=0(\.0*)?$/.test(q.trim()))
      .map(([name]) => name.trim().toLowerCase()),
  )
  if (file.br && accepted.has('br')) return 'br'
  if (file.gzip && (accepted.has('gzip') || accepted.has('*'))) return 'gzip'
  return undefined
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile) {
  reply.header('vary', 'Accept-Encoding').header('etag', file.etag)
  reply.header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
  if (file.type.startsWith('text/html')) reply.headers(PAGE_HEADERS)
  if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
  const encoding = chooseEncoding(request.headers['accept-encoding'], file)
  if (encoding) reply.header('content-encoding', encoding)
  return reply.type(file.type).send(encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : file.plain)
}

export function registerWebConsoleRoutes(app: FastifyInstance, files = loadWebConsole()): void {
  const page = (summary: string) => ({ schema: { summary, tags: ['web console'], security: [], response: { 200: mediaAnswer('text/html', summary), 304: noBody('Not modified (ETag)') } as Record<string, JsonSchema> } })
  const notBuilt = renderPlainError({ status: 404, code: 'not_found', message: 'The web console is not built on this server: run `npm run build`.' })
  const notFound = (request: FastifyRequest) =>
    renderPlainError({ status: 404, code: 'not_found', message: `The resource could not be found: ${request.url.split('?')[0]}` })

  app.get('/', page('The web console'), async (request, reply) => {
    const index = files.get('index.html')
    return index ? send(request, reply, index) : reply.code(404).send(notBuilt)
  })
  app.get('/console/vnc.html', page('The noVNC viewer remote-console URLs open'), async (request, reply) => {
    const page = files.get('console/vnc.html')
    return page ? send(request, reply, page) : reply.code(404).send(notBuilt)
  })
  const asset = { summary: "The web console's code, styles and images", tags: ['web console'], security: [], response: { 200: mediaAnswer('application/octet-stream', 'The file, in its own media type (text/javascript, text/css, image/svg+xml…)'), 304: noBody('Not modified (ETag)') } as Record<string, JsonSchema> }
  app.get<{ Params: { name: string } }>('/assets/:name', { schema: asset }, async (request, reply) => {
    const file = files.get(`assets/${request.params.name}`)
    return file ? send(request, reply, file) : reply.code(404).send(notFound(request))
  })
}
