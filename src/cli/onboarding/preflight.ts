/**
 * prep-node's checks of the host, each read through the Host root so tests can stage any host. A `required`
 * failure stops onboarding; a warning is printed and onboarding goes on (the simulated driver, for one, needs
 * no virtualization extensions).
 */
import type { Host } from '../host/host.js'

export interface CheckResult {
  name: string
  ok: boolean
  required: boolean
  detail: string
}

/** Distributions and releases pcc onboards. */
export const SUPPORTED_OS: Record<string, string[]> = { ubuntu: ['22.04', '24.04'], debian: ['12'] }
const MIN_MEMORY_MB = 4096
const MIN_FREE_DISK_GB = 10
/** Rule 3: bonds must be active-backup or LACP (802.3ad). */
const ALLOWED_BOND_MODES = [/active-backup/i, /802\.3ad/i]

export function osRelease(host: Host): Record<string, string> {
  const text = host.readText('/etc/os-release') ?? ''
  return Object.fromEntries(
    text
      .split('\n')
      .map((line) => /^([A-Z_]+)=(.*)$/.exec(line.trim()))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2].replace(/^"|"$/g, '')]),
  )
}

function checkOs(host: Host): CheckResult {
  const os = osRelease(host)
  const versions = SUPPORTED_OS[os.ID ?? '']
  const ok = versions?.includes(os.VERSION_ID ?? '') ?? false
  const supported = Object.entries(SUPPORTED_OS).map(([id, v]) => `${id} ${v.join('/')}`).join(', ')
  return { name: 'supported operating system', ok, required: true, detail: ok ? `${os.PRETTY_NAME ?? os.ID}` : `${os.PRETTY_NAME ?? 'unknown'} is not supported (supported: ${supported})` }
}

function checkRoot(host: Host): CheckResult {
  const ok = host.isRoot()
  return { name: 'running as root', ok, required: true, detail: ok ? 'yes' : 'run it with sudo' }
}

function checkVirtualization(host: Host): CheckResult {
  const flags = /^flags\s*:(.*)$/m.exec(host.readText('/proc/cpuinfo') ?? '')?.[1] ?? ''
  const ok = /\b(vmx|svm)\b/.test(flags)
  return { name: 'virtualization extensions (vmx/svm)', ok, required: false, detail: ok ? 'enabled' : 'not found: enable VT-x/AMD-V in the firmware for real guests (the simulated driver runs without)' }
}

function checkMemory(host: Host): CheckResult {
  const kb = Number(/^MemTotal:\s+(\d+)/m.exec(host.readText('/proc/meminfo') ?? '')?.[1] ?? 0)
  const mb = Math.floor(kb / 1024)
  const ok = mb >= MIN_MEMORY_MB
  return { name: 'memory', ok, required: true, detail: `${mb} MiB${ok ? '' : ` (at least ${MIN_MEMORY_MB} MiB needed)`}` }
}

function checkDisk(host: Host): CheckResult {
  const gb = Math.floor(host.freeBytes('/') / 2 ** 30)
  const ok = gb >= MIN_FREE_DISK_GB
  return { name: 'free disk', ok, required: true, detail: `${gb} GiB free${ok ? '' : ` (at least ${MIN_FREE_DISK_GB} GiB needed)`}` }
}

function checkBonds(host: Host): CheckResult {
  const bonds = host.filesUnder('/proc/net/bonding')
  const bad = bonds.filter((file) => {
    const mode = /^Bonding Mode:\s*(.*)$/m.exec(host.readText(file) ?? '')?.[1] ?? ''
    return !ALLOWED_BOND_MODES.some((allowed) => allowed.test(mode))
  })
  const names = (files: string[]) => files.map((f) => f.split('/').pop()).join(', ')
  if (bonds.length === 0) return { name: 'network bonds', ok: true, required: true, detail: 'none' }
  return {
    name: 'network bonds',
    ok: bad.length === 0,
    required: true,
    detail: bad.length === 0 ? `${names(bonds)} in active-backup or 802.3ad mode` : `${names(bad)} must use mode active-backup or 802.3ad (LACP)`,
  }
}

function checkTimeSync(host: Host): CheckResult {
  const sources: [string, string][] = [
    ['/run/systemd/timesync/synchronized', 'systemd-timesyncd'],
    ['/run/chrony/chronyd.pid', 'chrony'],
    ['/run/chronyd.pid', 'chrony'],
    ['/run/ntpd.pid', 'ntpd'],
  ]
  const found = sources.find(([file]) => host.exists(file))
  return { name: 'time synchronisation', ok: Boolean(found), required: false, detail: found ? found[1] : 'no NTP service found: install chrony so the host clock stays right' }
}

export function preflight(host: Host): CheckResult[] {
  return [checkOs(host), checkRoot(host), checkVirtualization(host), checkMemory(host), checkDisk(host), checkBonds(host), checkTimeSync(host)]
}
