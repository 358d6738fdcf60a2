/**
 * The all-in-one preflight (`PCC_LOCAL_HYPERVISOR=qemu`): every package the mode needs is checked at start, by its
 * Debian name, with the probes pointed at a scratch machine (a PATH and a root made here) rather than by removing
 * packages; and a real pcc-server started with a PATH missing dnsmasq, or as a user other than root, stops at once
 * with one line that says what to do.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { findBusybox, findDropbear, findGuestAgent } from '../../src/guest-image/build.js'
import { preflight, REQUIREMENTS, type ProbeRoots } from '../../src/server/all-in-one/preflight.js'
import { SERVER_MAIN, spawnServer } from '../../src/testkit/process.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-preflight-')
after(temp.removeAll)

const PROGRAMS = ['qemu-system-x86_64', 'qemu-img', 'qemu-nbd', 'qemu-storage-daemon', 'genisoimage', 'mformat', 'mcopy', 'syslinux', 'dnsmasq', 'nft', 'conntrack', 'ip', 'unshare', 'nsenter']
/** Why this machine has no static busybox, dropbear or qemu-ga to copy into the scratch root (the probes read them), or undefined. */
function noStaticBusybox(): string | undefined {
  try {
    findBusybox('/')
    findDropbear('/')
    findGuestAgent('/')
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}

/** A scratch machine with everything the mode needs but `without` (program names or `kernel`/`busybox`). */
function machine(without: string[] = []): ProbeRoots {
  const dir = temp.make()
  const bin = join(dir, 'bin')
  const sysroot = join(dir, 'root')
  mkdirSync(bin)
  for (const name of PROGRAMS.filter((p) => !without.includes(p))) {
    writeFileSync(join(bin, name), '#!/bin/sh\n')
    chmodSync(join(bin, name), 0o755)
  }
  if (!without.includes('kernel')) {
    mkdirSync(join(sysroot, 'boot'), { recursive: true })
    writeFileSync(join(sysroot, 'boot/vmlinuz-6.1.0-9-cloud-amd64'), 'kernel')
    mkdirSync(join(sysroot, 'lib/modules/6.1.0-9-cloud-amd64'), { recursive: true })
    writeFileSync(join(sysroot, 'lib/modules/6.1.0-9-cloud-amd64/modules.dep'), '')
  }
  mkdirSync(join(sysroot, 'bin'), { recursive: true })
  if (!without.includes('busybox')) copyFileSync('/bin/busybox', join(sysroot, 'bin/busybox'))
  if (!without.includes('dropbear')) {
    const { dropbear, dropbearkey, libraries } = findDropbear('/')
    for (const file of [dropbear, dropbearkey, ...libraries]) {
      mkdirSync(dirname(join(sysroot, file)), { recursive: true })
      copyFileSync(file, join(sysroot, file))
    }
  }
  if (!without.includes('qemu-ga')) {
    mkdirSync(join(sysroot, 'usr/sbin'), { recursive: true })
    copyFileSync(findGuestAgent('/'), join(sysroot, 'usr/sbin/qemu-ga'))
  }
  const kvm = join(dir, 'kvm')
  if (!without.includes('kvm')) writeFileSync(kvm, '')
  return { path: `${bin}:${join(dir, 'empty')}`, sysroot, uid: 0, kvmDevice: kvm }
}

describe('all-in-one preflight', { skip: noStaticBusybox() }, () => {
  it('passes on a machine with everything, and says KVM', () => {
    const check = preflight(machine())
    assert.equal(check.fault, undefined, check.summary.join('\n'))
    assert.equal(check.accelerator, 'kvm')
    assert.match(check.summary.join('\n'), /root: yes/)
    assert.match(check.summary.join('\n'), /packages: all \d+ present/)
    assert.ok(check.summary.length <= 24, 'one screen')
  })

  it('names each missing thing by its Debian package, with the apt-get command', () => {
    const cases: [string[], string[]][] = [
      [['dnsmasq'], ['dnsmasq-base']],
      [['kernel'], ['linux-image-cloud-amd64']],
      [['busybox'], ['busybox-static']],
      [['dropbear'], ['dropbear-bin']],
      [['qemu-ga'], ['qemu-guest-agent']],
      [['kernel', 'busybox'], ['linux-image-cloud-amd64', 'busybox-static']],
      [['nft', 'conntrack', 'genisoimage', 'mcopy'], ['genisoimage', 'mtools', 'nftables', 'conntrack']],
      [['qemu-system-x86_64', 'qemu-nbd', 'syslinux'], ['qemu-system-x86', 'qemu-utils', 'syslinux']],
    ]
    for (const [without, packages] of cases) {
      const check = preflight(machine(without))
      assert.ok(check.fault, `missing ${without.join(', ')} is a fault`)
      assert.match(check.fault, new RegExp(`apt-get install ${packages.join(' ')}$`), `${without.join(', ')}: ${check.fault}`)
      for (const p of packages) assert.match(check.summary.join('\n'), new RegExp(`^    ${p}: `, 'm'))
    }
  })

  it('falls back to TCG without a usable KVM device, which is no fault', () => {
    const check = preflight(machine(['kvm']))
    assert.equal(check.fault, undefined)
    assert.equal(check.accelerator, 'tcg')
    assert.match(check.summary.join('\n'), /accelerator: TCG/)
  })

  it('refuses a start by a user other than root before anything else', () => {
    const check = preflight({ ...machine(['dnsmasq']), uid: 1000 })
    assert.match(check.fault ?? '', /needs root/)
    assert.match(check.summary.join('\n'), /root: NO/)
  })

  it('checks every package of the README and .ci/run', () => {
    const named = new Set(REQUIREMENTS.map((r) => r.debianPackage))
    for (const p of ['qemu-system-x86', 'qemu-utils', 'genisoimage', 'mtools', 'syslinux', 'linux-image-cloud-amd64', 'busybox-static', 'dropbear-bin', 'qemu-guest-agent', 'dnsmasq-base', 'nftables', 'conntrack']) assert.ok(named.has(p), p)
  })
})

describe('pcc-server in all-in-one mode on a machine that lacks something', () => {
  it('stops at once, exit 2, one line naming the package and the apt-get command', { skip: process.getuid?.() !== 0 && 'not root' }, async () => {
    // Every program but dnsmasq, as the agent would find them on this PATH.
    const bin = temp.make()
    for (const name of PROGRAMS.filter((p) => p !== 'dnsmasq')) {
      const found = spawnSync('sh', ['-c', `command -v ${name}`], { env: { PATH: `${process.env.PATH}:/usr/sbin:/sbin` } }).stdout.toString().trim()
      if (found) symlinkSync(found, join(bin, name))
    }
    const dataDir = temp.make()
    const server = spawnServer({ PATH: bin, PCC_LOCAL_HYPERVISOR: 'qemu', PCC_DATA_DIR: dataDir, PCC_LISTEN: '127.0.0.1:0' })
    assert.equal(await server.exited(), 2)
    const lines = server.stderr().split('\n').filter(Boolean)
    assert.equal(lines.length, 1, server.stderr())
    assert.match(lines[0], /^pcc-server: error: PCC_LOCAL_HYPERVISOR=qemu needs Debian packages that are not installed: .*dnsmasq-base/)
    assert.match(lines[0], /apt-get install (\S+ )*dnsmasq-base/)
    assert.match(server.stdout(), /all-in-one preflight/)
    assert.match(server.stdout(), /^ {4}dnsmasq-base: DHCP/m)
  })

  it('says at once that it needs root', { skip: (process.getuid?.() !== 0 || spawnSync('setpriv', ['--help']).error) && 'needs root and setpriv to start as another user' }, async () => {
    const dataDir = temp.make()
    chmodSync(dataDir, 0o777)
    const server = spawnServer({ PCC_LOCAL_HYPERVISOR: 'qemu', PCC_DATA_DIR: dataDir, PCC_LISTEN: '127.0.0.1:0' }, [], {
      command: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, SERVER_MAIN],
    })
    assert.equal(await server.exited(), 2)
    assert.match(server.stderr(), /^pcc-server: error: PCC_LOCAL_HYPERVISOR=qemu runs guests, bridges, namespaces and nftables on this machine and needs root/)
  })
})
