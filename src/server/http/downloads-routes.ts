/**
 * Open downloads for hosts being onboarded: the pcctl release bundle, its published SHA-256, and install.sh
 * with this server's public URL filled in. The files come from the build (scripts/build-release.mjs).
 */
import { createReadStream, existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import type { AppDeps } from '../deps.js'
import { errorBodySchema } from './error-renderers.js'
import { mediaAnswer, type JsonSchema } from './openapi.js'

const RELEASE_DIR = fileURLToPath(new URL('../../../release/', import.meta.url))
const INSTALLER = fileURLToPath(new URL('../../../../install.sh', import.meta.url))

export function registerDownloadRoutes(app: FastifyInstance, deps: AppDeps): void {
  const download = (mediaType: string, what: string) => ({ schema: { summary: `Download ${what}`, tags: ['downloads'], security: [], response: { 200: mediaAnswer(mediaType, what), 404: errorBodySchema(undefined) } as Record<string, JsonSchema> } })
  const release = (name: string) => `${RELEASE_DIR}${name}`
  const missing = { error: { code: 404, title: 'Not Found', message: 'The pcctl release is not built on this server: run `npm run build`.' } }

  app.get('/downloads/pcctl', download('application/octet-stream', 'the pcctl release bundle'), async (_request, reply) => {
    if (!existsSync(release('pcctl.mjs'))) return reply.code(404).send(missing)
    return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="pcctl.mjs"').send(createReadStream(release('pcctl.mjs')))
  })
  app.get('/downloads/pcctl.sha256', download('text/plain', "the pcctl bundle's SHA-256 (sha256sum format)"), async (_request, reply) => {
    if (!existsSync(release('pcctl.mjs.sha256'))) return reply.code(404).send(missing)
    return reply.type('text/plain').send(readFileSync(release('pcctl.mjs.sha256'), 'utf8'))
  })
  const agentMissing = { error: { code: 404, title: 'Not Found', message: 'The pcc-agent release is not built on this server: run `npm run build`.' } }
  app.get('/downloads/pcc-agent', download('application/octet-stream', 'the pcc-agent release bundle'), async (_request, reply) => {
    if (!existsSync(release('pcc-agent.mjs'))) return reply.code(404).send(agentMissing)
    return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="pcc-agent.mjs"').send(createReadStream(release('pcc-agent.mjs')))
  })
  app.get('/downloads/pcc-agent.sha256', download('text/plain', "the pcc-agent bundle's SHA-256 (sha256sum format)"), async (_request, reply) => {
    if (!existsSync(release('pcc-agent.mjs.sha256'))) return reply.code(404).send(agentMissing)
    return reply.type('text/plain').send(readFileSync(release('pcc-agent.mjs.sha256'), 'utf8'))
  })
  app.get('/downloads/install.sh', download('text/x-shellscript', "the host installer, with this server's URL"), async (_request, reply) =>
    reply.type('text/x-shellscript').send(readFileSync(INSTALLER, 'utf8').replace('@PCC_URL@', deps.config.publicUrl)),
  )
}
