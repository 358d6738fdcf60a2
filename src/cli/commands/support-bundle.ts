/**
 * `pcctl generate-support-bundle`: the host's pcc logs, agent and CLI configuration (secrets redacted) and
 * system facts, in a tar.gz encrypted with OpenPGP to the control plane's support key, written as
 * <host>-<timestamp>.tgz.gpg under /tmp (or --log-dir). Only someone with the support private key can read it.
 */
import { writeFileSync } from 'node:fs'
import { arch, cpus, networkInterfaces, release, totalmem, uptime } from 'node:os'
import { join } from 'node:path'
import { createGzip } from 'node:zlib'
import { Transport } from '../../client/transport.js'
import { lazy } from '../lazy.js'
import type { CliContext } from '../context.js'
import { defaultLogDir, redact } from '../context.js'
import { Host } from '../host/host.js'
import type { CommandSpec } from '../spec.js'
import { readConfig } from '../config/store.js'
import { VERSION } from '../version.js'
import { CliFailure } from './config.js'

/** Host folders whose files go into the bundle, and where they land in it. */
const COLLECTED = [
  { from: '/var/log/pcc', to: 'logs/pcc' },
  { from: '/etc/pcc', to: 'config/pcc' },
]
const SYSTEM_LOGS = ['/var/log/syslog', '/var/log/messages', '/var/log/dpkg.log']
/** The newest part of a large log is what support needs; a cap keeps bundles small. */
const MAX_LOG_BYTES = 5 << 20
const SECRET_LINE = /^(\s*[\w.-]*(password|secret|token|passcode|private[_-]?key|credential)[\w.-]*\s*[:=]\s*).+$/gim

export function redactText(name: string, text: string): string {
  if (name.endsWith('.json')) {
    try {
      return JSON.stringify(redact(JSON.parse(text)), null, 2)
    } catch {
      // Not JSON after all: fall through to line redaction.
    }
  }
  return text.replace(SECRET_LINE, '$1[redacted]')
}

function facts(host: Host): Record<string, unknown> {
  return {
    hostname: host.hostname(),
    pcctl_version: VERSION,
    collected_at: new Date().toISOString(),
    os_release: host.readText('/etc/os-release') ?? null,
    kernel: release(),
    arch: arch(),
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    memory_bytes: totalmem(),
    uptime_seconds: uptime(),
    interfaces: Object.fromEntries(Object.entries(networkInterfaces()).map(([name, addrs]) => [name, (addrs ?? []).map((a) => ({ address: a.address, family: a.family, mac: a.mac }))])),
  }
}

async function tarGz(entries: { name: string; content: string }[]): Promise<Buffer> {
  const { pack } = lazy('tar-stream')
  const archive = pack()
  const gzip = createGzip()
  const chunks: Buffer[] = []
  gzip.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve, reject) => {
    gzip.on('end', resolve)
    gzip.on('error', reject)
  })
  archive.pipe(gzip)
  for (const entry of entries) archive.entry({ name: entry.name, mode: 0o600 }, entry.content)
  archive.finalize()
  await done
  return Buffer.concat(chunks)
}

/** The support public key: the copy onboarding left on the host, else the control plane's. */
async function supportKey(context: CliContext, host: Host): Promise<string> {
  const local = host.readText('/etc/pcc/support-key.asc')
  if (local) return local
  const base = readConfig(context.configDir)?.accountUrl ?? context.env.OS_AUTH_URL?.replace(/\/identity\/v3\/?$/, '')
  if (!base) throw new CliFailure('no support key: run `pcctl config set` (or onboard the host with prep-node) so pcctl can fetch it from the control plane')
  const transport = new Transport({ insecure: Boolean(context.global.insecure), caFile: context.global['os-cacert'] as string | undefined, timeoutMs: 10_000 })
  try {
    return (await transport.request('GET', `${base}/resmgr/v1/support/public-key`, { headers: { accept: 'application/pgp-keys' } })).text
  } catch (err) {
    throw new CliFailure(`cannot fetch the support key from ${base}: ${(err as Error).message}`)
  } finally {
    await transport.close()
  }
}

export const generateSupportBundle: CommandSpec = {
  words: ['generate-support-bundle'],
  summary: 'write an encrypted archive (.tgz.gpg) of this host\'s logs and configuration, for support (run with sudo on the host)',
  flags: [],
  async run(context) {
    const host = Host.fromEnv(context.env)
    if (!host.isRoot()) throw new CliFailure('generate-support-bundle reads system logs: run it as root (sudo pcctl generate-support-bundle)')
    const entries: { name: string; content: string }[] = [{ name: 'facts.json', content: JSON.stringify(facts(host), null, 2) }]
    for (const { from, to } of COLLECTED) {
      for (const file of host.filesUnder(from)) entries.push({ name: `${to}${file.slice(from.length)}`, content: redactText(file, host.readText(file)!) })
    }
    for (const file of SYSTEM_LOGS) {
      const text = host.readText(file)
      if (text !== undefined) entries.push({ name: `logs/system${file.slice('/var/log'.length)}`, content: redactText(file, text.slice(-MAX_LOG_BYTES)) })
    }
    const cliLogs = defaultLogDir(context.env)
    for (const file of new Host('/').filesUnder(cliLogs)) entries.push({ name: `logs/pcctl${file.slice(cliLogs.length)}`, content: redactText(file, new Host('/').readText(file)!) })
    const saved = readConfig(context.configDir)
    if (saved) entries.push({ name: 'config/pcctl/config.json', content: JSON.stringify(redact(saved), null, 2) })
    context.stderr.write(`Collected ${entries.length} files; encrypting …\n`)

    const archive = await tarGz(entries)
    const { createMessage, encrypt, readKey } = lazy('openpgp')
    const key = await readKey({ armoredKey: await supportKey(context, host) })
    const encrypted = await encrypt({ message: await createMessage({ binary: archive }), encryptionKeys: key, format: 'binary' })
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-')
    const out = join((context.global['log-dir'] as string | undefined) ?? '/tmp', `${host.hostname()}-${stamp}.tgz.gpg`)
    writeFileSync(out, encrypted as Uint8Array, { mode: 0o600 })
    context.log('info', 'support bundle written', { path: out, files: entries.length })
    context.stdout.write(`${out}\n`)
    return 0
  },
}
