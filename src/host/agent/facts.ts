/**
 * What the agent reports about its host, read through a root prefix (`/` on a real host, a scratch directory in
 * tests): hostname, OS, CPU, memory, disk, NICs with their bonds (/proc/net/bonding). The shape is the wire's
 * (src/contracts/host/facts.ts).
 */
import { existsSync, readdirSync, readFileSync, statfsSync } from 'node:fs'
import { arch as osArch, cpus, hostname as osHostname, networkInterfaces, totalmem, type as osType, release } from 'node:os'
import { join } from 'node:path'
import type { HeartbeatFacts, HostFacts, HostNic } from '../../contracts/host/facts.js'

export type { HeartbeatFacts, HostFacts }

const read = (root: string, path: string): string | undefined => {
  try {
    return readFileSync(join(root, path), 'utf8')
  } catch {
    return undefined
  }
}

export function osRelease(text: string | undefined): HostFacts['os_info'] {
  const fields: Record<string, string> = {}
  for (const line of (text ?? '').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim())
    if (m) fields[m[1]] = m[2].replace(/^"(.*)"$/, '$1')
  }
  return { id: fields.ID ?? 'linux', version_id: fields.VERSION_ID ?? '', pretty_name: fields.PRETTY_NAME ?? `${osType()} ${release()}` }
}

export function cpuFacts(text: string | undefined): HostFacts['cpu'] {
  if (!text) {
    const list = cpus()
    return { count: Math.max(1, list.length), model: list[0]?.model ?? 'unknown', virtualization: false }
  }
  const count = (text.match(/^processor\s*:/gm) ?? []).length
  const model = /^model name\s*:\s*(.*)$/m.exec(text)?.[1]?.trim() ?? 'unknown'
  const flags = /^(flags|Features)\s*:\s*(.*)$/m.exec(text)?.[2] ?? ''
  return { count: Math.max(1, count), model, virtualization: /\b(vmx|svm)\b/.test(flags) }
}

/** Parses one /proc/net/bonding/<bond> file: the mode and the slave interfaces. */
export function bondFacts(text: string): { mode: string; slaves: string[] } {
  const mode = /^Bonding Mode:\s*(.*)$/m.exec(text)?.[1]?.trim() ?? 'unknown'
  const slaves = [...text.matchAll(/^Slave Interface:\s*(\S+)/gm)].map((m) => m[1])
  return { mode, slaves }
}

export function gatherFacts(root: string): HostFacts {
  const hostname = read(root, 'etc/hostname')?.trim() || osHostname()
  const mem = /^MemTotal:\s*(\d+)\s*kB/m.exec(read(root, 'proc/meminfo') ?? '')
  const memoryMb = mem ? Math.floor(Number(mem[1]) / 1024) : Math.floor(totalmem() / 1048576)
  let diskGb = 0
  try {
    const s = statfsSync(root)
    diskGb = Math.floor((s.blocks * s.bsize) / 1e9)
  } catch {
    diskGb = 0
  }
  const system = networkInterfaces()
  const sysNet = join(root, 'sys/class/net')
  const names = existsSync(sysNet) ? readdirSync(sysNet).filter((n) => n !== 'lo') : Object.keys(system).filter((n) => !system[n]?.every((a) => a.internal))
  const bonds = new Map<string, { mode: string; slaves: string[] }>()
  const bondDir = join(root, 'proc/net/bonding')
  if (existsSync(bondDir)) for (const b of readdirSync(bondDir)) bonds.set(b, bondFacts(read(root, `proc/net/bonding/${b}`) ?? ''))
  const nics: HostNic[] = names.sort().map((name) => {
    const addrs = system[name] ?? []
    const mac = read(root, `sys/class/net/${name}/address`)?.trim() ?? addrs[0]?.mac ?? '00:00:00:00:00:00'
    const ips = addrs.filter((a) => !a.internal).map((a) => a.address)
    const bond = bonds.get(name)
    return { name, mac, ips, ...(bond && { bond }) }
  })
  const a = osArch()
  return {
    hostname,
    os_info: osRelease(read(root, 'etc/os-release') ?? read(root, 'usr/lib/os-release')),
    arch: a === 'x64' ? 'x86_64' : a === 'arm64' ? 'aarch64' : a,
    cpu: cpuFacts(read(root, 'proc/cpuinfo')),
    memory_mb: memoryMb,
    disk_gb: diskGb,
    nics,
  }
}
