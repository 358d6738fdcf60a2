/**
 * Runs the real `pcc-server` process (dist/src/server/main.js) for tests of start-up, shutdown and failures.
 * The child gets a clean environment: none of the caller's PCC_* variables leak in (the server refuses
 * unknown ones), only those the test passes.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const SERVER_MAIN = fileURLToPath(new URL('../server/main.js', import.meta.url))

export interface ServerProcess {
  child: ChildProcess
  /** Everything written so far. */
  stdout(): string
  stderr(): string
  /** Resolves with the URL from the start banner ("listening on URL"); rejects if the process exits first. */
  listening(timeoutMs?: number): Promise<string>
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited(): Promise<number | string>
  /** Sends the signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | string>
}

export function cleanEnv(env: Record<string, string | undefined> = {}): Record<string, string> {
  const base: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('PCC_') && value !== undefined) base[name] = value
  for (const [name, value] of Object.entries(env)) if (value !== undefined) base[name] = value
  return base
}

export function spawnServer(env: Record<string, string | undefined>, args: string[] = [], options: { command?: string[] } = {}): ServerProcess {
  const command = options.command ?? [process.execPath, SERVER_MAIN]
  const child = spawn(command[0], [...command.slice(1), ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d))
  child.stderr!.on('data', (d: Buffer) => (err += d))
  const exit = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited: () => exit,
    listening: (timeoutMs = 30_000) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no start banner within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs)
        const check = () => {
          const match = /listening on (\S+?),/.exec(out)
          if (match) {
            clearTimeout(timer)
            child.stdout!.off('data', check)
            resolve(match[1])
          }
        }
        child.stdout!.on('data', check)
        check()
        void exit.then((code) => {
          clearTimeout(timer)
          reject(new Error(`pcc-server exited (${code}) before listening; stderr: ${err}`))
        })
      }),
    stop: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exit
    },
  }
}
