#!/usr/bin/env node
/** pcc-agent entry point: `node pcc-agent.mjs [--root <dir>]` (root defaults to /). */
import { readFileSync } from 'node:fs'
import { PccAgent } from './agent.js'

declare const PCC_AGENT_VERSION: string | undefined

function version(): string {
  if (typeof PCC_AGENT_VERSION === 'string') return PCC_AGENT_VERSION
  try {
    return (JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

function rootFromArgs(argv: string[]): string {
  const i = argv.indexOf('--root')
  if (i >= 0 && argv[i + 1]) return argv[i + 1]
  const eq = argv.find((a) => a.startsWith('--root='))
  return eq ? eq.slice('--root='.length) : '/'
}

if (process.argv.includes('--version')) {
  process.stdout.write(`pcc-agent ${version()}\n`)
  process.exit(0)
}

let agent: PccAgent
try {
  agent = new PccAgent(rootFromArgs(process.argv.slice(2)), version())
} catch (err) {
  process.stderr.write(`pcc-agent: ${(err as Error).message}\n`)
  process.exit(2)
}
const stop = () => {
  agent.log('info', 'pcc-agent stopping')
  agent.stop()
  setTimeout(() => process.exit(0), 50).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
agent.run().catch((err: unknown) => {
  agent.log('error', 'pcc-agent failed', { error: (err as Error).message })
  process.stderr.write(`pcc-agent: ${(err as Error).message}\n`)
  process.exit(1)
})
