/** Runs pcctl in-process with captured output, a scratch config folder and no terminal. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Writable } from 'node:stream'
import { fileLogger } from '../cli/context.js'
import { runCli } from '../cli/run.js'

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

class Capture extends Writable {
  text = ''
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString()
    done()
  }
}

export interface CliSandbox {
  configDir: string
  logDir: string
  run(argv: string[], env?: Record<string, string>): Promise<CliRun>
}

/** The sandboxes' roots, removed when the test process exits (a sandbox has no close of its own). */
const sandboxRoots = new Set<string>()
process.once('exit', () => {
  for (const root of sandboxRoots) rmSync(root, { recursive: true, force: true })
})

export function cliSandbox(): CliSandbox {
  const root = mkdtempSync(join(tmpdir(), 'pcctl-test-'))
  sandboxRoots.add(root)
  const configDir = join(root, 'config')
  const logDir = join(root, 'log')
  return {
    configDir,
    logDir,
    async run(argv, env = {}) {
      const stdout = new Capture()
      const stderr = new Capture()
      const code = await runCli(argv, {
        stdout,
        stderr,
        stdin: new PassThrough(),
        env: { PATH: process.env.PATH, HOME: root, ...env },
        configDir,
        log: fileLogger(logDir, false, stderr),
        prompt: async (q) => Promise.reject(new Error(`no terminal to ask "${q.trim()}": pass it as a flag`)),
      })
      return { code, stdout: stdout.text, stderr: stderr.text }
    },
  }
}
