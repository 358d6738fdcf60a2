/**
 * An NBD client for tests: QEMU's own qemu-io and qemu-img, run (optionally) inside a test host's network
 * namespace, so bytes really cross the network to the export, with the TLS-PSK key of an attachment.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BlockdevSpec, NbdSource } from '../contracts/host/volume.js'

export interface IoResult {
  ok: boolean
  output: string
}

function exec(argv: string[], timeoutMs = 60_000): Promise<IoResult> {
  return new Promise((resolve) => {
    execFile(argv[0], argv.slice(1), { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`
      // qemu-io reports a failed pattern check on stdout and may still exit 0 in older versions.
      resolve({ ok: !err && !/Pattern verification failed|failed:|can't open/i.test(output), output })
    })
  })
}

/**
 * Runs qemu-io commands (`write -P 0x41 0 1M`, `read -P 0x41 0 1M`) against an export. `key` overrides the
 * source's key (to check a wrong one is refused); `tls: false` connects without TLS at all.
 */
export async function nbdIo(source: NbdSource, commands: string[], options: { exec?: string[]; key?: string; tls?: boolean; readOnly?: boolean } = {}): Promise<IoResult> {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-nbd-test-'))
  try {
    writeFileSync(join(dir, 'keys.psk'), `${source.pskIdentity}:${options.key ?? source.pskKey}\n`, { mode: 0o600 })
    const tls = options.tls ?? true
    const spec = { driver: 'nbd', server: { type: 'inet', host: source.host, port: String(source.port) }, export: source.export, ...(tls ? { 'tls-creds': 'tls0' } : {}) }
    const object = tls ? ['--object', `tls-creds-psk,id=tls0,dir=${dir},endpoint=client,username=${source.pskIdentity}`] : []
    // A read-only export refuses a client that opens it for writing (`-r` opens it read-only).
    return await exec([...(options.exec ?? []), 'qemu-io', ...(options.readOnly ? ['-r'] : []), ...object, `json:${JSON.stringify({ driver: 'raw', file: spec })}`, ...commands.flatMap((c) => ['-c', c])])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The size an export announces, read with qemu-img over NBD. */
export async function nbdSize(source: NbdSource, options: { exec?: string[] } = {}): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-nbd-test-'))
  try {
    writeFileSync(join(dir, 'keys.psk'), `${source.pskIdentity}:${source.pskKey}\n`, { mode: 0o600 })
    const spec = { driver: 'nbd', server: { type: 'inet', host: source.host, port: String(source.port) }, export: source.export, 'tls-creds': 'tls0' }
    const result = await exec([...(options.exec ?? []), 'qemu-img', 'info', '--output=json', '--object', `tls-creds-psk,id=tls0,dir=${dir},endpoint=client,username=${source.pskIdentity}`, `json:${JSON.stringify(spec)}`])
    if (!result.ok) throw new Error(result.output)
    return (JSON.parse(result.output) as { 'virtual-size': number })['virtual-size']
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** qemu-io commands on a block node opened locally (a backend's volume or snapshot). */
export function localIo(spec: BlockdevSpec, commands: string[]): Promise<IoResult> {
  return exec(['qemu-io', ...(spec['read-only'] ? ['-r'] : []), `json:${JSON.stringify(spec)}`, ...commands.flatMap((c) => ['-c', c])])
}
