#!/usr/bin/env node
/** pcctl: the process entry. Builds the real context (terminal prompts, log file) and runs the command. */
import { createInterface } from 'node:readline'
import { defaultConfigDir, defaultLogDir, fileLogger } from './context.js'
import { runCli } from './run.js'

async function prompt(question: string, options: { secret?: boolean } = {}): Promise<string> {
  if (!process.stdin.isTTY) throw new Error(`cannot ask "${question.trim()}" without a terminal: pass the value as a flag (see --help)`)
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true })
  if (options.secret) {
    // Echo nothing while the password is typed.
    ;(rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
      if (s.includes(question)) process.stderr.write(s)
    }
  }
  try {
    return await new Promise<string>((resolve) => rl.question(question, resolve))
  } finally {
    if (options.secret) process.stderr.write('\n')
    rl.close()
  }
}

const argv = process.argv.slice(2)
const logDirIndex = argv.findIndex((a) => a === '--log-dir' || a.startsWith('--log-dir='))
const logDir = logDirIndex < 0 ? defaultLogDir(process.env) : argv[logDirIndex].includes('=') ? argv[logDirIndex].split('=')[1] : argv[logDirIndex + 1]
const noPrompt = argv.includes('--no-prompt')

const code = await runCli(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  configDir: defaultConfigDir(process.env),
  log: fileLogger(logDir, argv.includes('--verbose'), process.stderr),
  prompt: noPrompt ? async (q) => Promise.reject(new Error(`--no-prompt is set and "${q.trim()}" has no value`)) : prompt,
})
process.exit(code)
