/**
 * What is particular to the QEMU driver, beyond the conformance suite: the command line (no QEMU needed), the
 * accelerator probe, the image cache's refusals, a restarted driver finding its guests, guests that power off or
 * crash by themselves, image properties (buses, machine types, kernel/ramdisk), flavor disks, NICs, and failures
 * that must leave nothing behind.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { POWER } from '../../src/contracts/host/compute-driver.js'
import { DriverError, type GuestImageRef, type GuestSpec } from '../../src/contracts/host/compute-driver.js'
import { probeAccelerator } from '../../src/host/compute/qemu/accelerator.js'
import { adminUser, cpuTopology, guestHardware, imageHardware, nicNames, qemuArgs, type LaunchPlan } from '../../src/host/compute/qemu/command-line.js'
import { tapName } from '../../src/contracts/network/names.js'
import { readConsoleLog, rotateConsoleLog } from '../../src/host/compute/qemu/console-log.js'
import { HostPaths } from '../../src/host/compute/qemu/host-paths.js'
import { GuestAgentClient, GuestAgentError, GuestAgentUnavailable } from '../../src/host/compute/qemu/qga.js'
import { ImageCache } from '../../src/host/compute/qemu/image-cache.js'
import { cleanStopMs, QemuDriver } from '../../src/host/compute/qemu/qemu-driver.js'
import { COMMAND_TIMEOUT_MS, LONG_COMMAND_FACTOR } from '../../src/contracts/host/commands.js'
import { metadataFiles } from '../../src/server/metadata/documents.js'
import type { GuestImage } from '../../src/guest-image/build.js'
import { facts, fileImage, guestImage, killQemusUnder, lastBoot, lastTick, qemuLeftovers, realGuestsMissing } from '../../src/testkit/qemu.js'

const PLAN: LaunchPlan = {
  binary: 'qemu-system-x86_64', name: 'instance-00000001', uuid: 'c0ffee00-0000-4000-8000-000000000001', accel: 'tcg', cpu: undefined, machine: 'pc',
  vcpus: 2, memoryMb: 256, pidfile: '/r/qemu.pid', qmpSocket: '/run/x.qmp', serialSocket: '/run/x.serial', consoleLog: '/i/console.log', vncSocket: '/run/x.vnc',
  disks: [
    { node: 'root', file: '/i/disk', format: 'qcow2', bus: 'virtio', bootIndex: 1 },
    { node: 'config', file: '/i/disk.config', format: 'raw', bus: 'ide', cdrom: true, readOnly: true },
  ],
  nics: [], daemonize: true, hotplugPorts: 4,
}

const arg = (args: string[], flag: string) => args.filter((_, i) => args[i - 1] === flag)

describe('the clean-stop wait', () => {
  it('is Nova-like by default and always leaves the hard stop time inside the command the control plane waits for', () => {
    assert.equal(cleanStopMs(undefined), 30_000)
    assert.equal(cleanStopMs(5_000), 5_000)
    for (const configured of [60_000, 120_000, 3_600_000]) {
      assert.ok(cleanStopMs(configured) + 20_000 < COMMAND_TIMEOUT_MS, `${configured}: a clean stop, then a hard stop of at most 20 s`)
      assert.ok(cleanStopMs(configured, true) + 20_000 < COMMAND_TIMEOUT_MS * LONG_COMMAND_FACTOR)
    }
    assert.equal(cleanStopMs(60_000, true), 60_000, 'a resize keeps a longer clean wait')
  })
})

describe('the QEMU command line', () => {
  it('daemonizes with a pidfile, no default devices, QMP, serial with its log, VNC: all on unix sockets', () => {
    const args = qemuArgs(PLAN)
    for (const flag of ['-nodefaults', '-no-user-config', '-daemonize']) assert.ok(args.includes(flag), flag)
    assert.deepEqual(arg(args, '-pidfile'), ['/r/qemu.pid'])
    assert.ok(arg(args, '-chardev').includes('socket,id=qmp,path=/run/x.qmp,server=on,wait=off'))
    assert.ok(arg(args, '-chardev').includes('socket,id=serial0,path=/run/x.serial,server=on,wait=off,logfile=/i/console.log,logappend=on'))
    assert.deepEqual(arg(args, '-vnc'), ['unix:/run/x.vnc'])
    assert.deepEqual(arg(args, '-accel'), ['tcg'])
    assert.deepEqual(arg(args, '-nic'), ['none'], 'no ports: no NIC')
    assert.match(arg(args, '-smbios')[0], /product=OpenStack Nova.*uuid=c0ffee00/)
  })

  it('names every disk format explicitly and puts the config drive on IDE as a CD-ROM', () => {
    const blockdevs = arg(qemuArgs(PLAN), '-blockdev').map((j) => JSON.parse(j) as Record<string, unknown>)
    assert.deepEqual(blockdevs[0], { driver: 'qcow2', 'node-name': 'root', file: { driver: 'file', filename: '/i/disk' } })
    assert.equal(blockdevs[1]['read-only'], true)
    const devices = arg(qemuArgs(PLAN), '-device')
    assert.ok(devices.includes('virtio-blk-pci,drive=root,id=disk-root,bootindex=1'))
    assert.ok(devices.includes('ide-cd,drive=config,id=disk-config,bus=ide.0,unit=0'))
  })

  it('plugs NICs into taps named after their ports, SCSI and SATA disks, hot-plug ports on q35, kernels and incoming migrations', () => {
    const portId = '5f2b7c1e-93aa-4c0e-8d4e-0123456789ab'
    const args = qemuArgs({
      ...PLAN, machine: 'q35', incoming: true,
      disks: [{ node: 'root', file: '/i/disk', format: 'qcow2', bus: 'scsi', bootIndex: 1 }, { node: 'config', file: '/c', format: 'raw', bus: 'sata', cdrom: true }],
      nics: [{ id: nicNames(portId).device, tap: tapName(portId), mac: 'fa:16:3e:00:00:01', model: 'virtio-net-pci' }],
      kernel: { kernel: '/k', ramdisk: '/r', cmdline: 'root=/dev/vda console=ttyS0' },
    })
    assert.equal(tapName(portId), 'tap5f2b7c1e-93')
    assert.ok(arg(args, '-netdev').includes('tap,id=hostnic-5f2b7c1e93aa4c0e,ifname=tap5f2b7c1e-93,script=no,downscript=no'))
    assert.ok(arg(args, '-device').includes('virtio-net-pci,netdev=hostnic-5f2b7c1e93aa4c0e,id=nic-5f2b7c1e93aa4c0e,mac=fa:16:3e:00:00:01'))
    assert.ok(arg(args, '-device').includes('virtio-scsi-pci,id=scsi0'))
    assert.ok(arg(args, '-device').includes('scsi-hd,drive=root,id=disk-root,bus=scsi0.0,bootindex=1'))
    assert.ok(arg(args, '-device').includes('ide-cd,drive=config,id=disk-config,bus=ide.0'))
    assert.equal(arg(args, '-device').filter((d) => d.startsWith('pcie-root-port')).length, 4)
    assert.deepEqual([arg(args, '-kernel'), arg(args, '-initrd'), arg(args, '-append')], [['/k'], ['/r'], ['root=/dev/vda console=ttyS0']])
    assert.deepEqual(arg(args, '-incoming'), ['defer'])
    assert.ok(args.includes('-S'))
  })

  it('refuses image properties QEMU cannot honour, naming them', () => {
    const image = (properties: Record<string, string>): GuestImageRef => ({ id: 'i', diskFormat: 'qcow2', containerFormat: 'bare', size: 1, virtualSize: 1, checksum: null, osHashAlgo: null, osHashValue: null, properties })
    assert.deepEqual(imageHardware(image({ hw_disk_bus: 'scsi', hw_vif_model: 'e1000', hw_machine_type: 'q35' })), {
      diskBus: 'scsi', cdromBus: undefined, vifModel: 'e1000', machine: 'q35', scsiController: 'virtio-scsi-pci', rng: undefined, video: 'VGA', rtc: 'utc', configDrive: false, firmware: 'bios', guestAgent: false, requireQuiesce: false,
    })
    assert.deepEqual(imageHardware(image({ hw_scsi_model: 'virtio-scsi', hw_rng_model: 'virtio', hw_video_model: 'none', os_type: 'windows', img_config_drive: 'mandatory', hw_firmware_type: 'uefi' })), {
      diskBus: 'virtio', cdromBus: undefined, vifModel: 'virtio-net-pci', machine: 'pc', scsiController: 'virtio-scsi-pci', rng: 'virtio-rng-pci', video: null, rtc: 'localtime', configDrive: true, firmware: 'uefi', guestAgent: false, requireQuiesce: false,
    })
    for (const [name, value] of [['hw_scsi_model', 'lsilogic'], ['hw_rng_model', 'egd'], ['hw_video_model', 'qxl2'], ['os_type', 'hurd'], ['img_config_drive', 'yes'], ['hw_firmware_type', 'coreboot']]) {
      assert.throws(() => imageHardware(image({ [name]: value })), new RegExp(`${name}=${value} is not supported`))
    }
    const args = qemuArgs({ ...PLAN, topology: { sockets: 1, cores: 2, threads: 1 }, vcpus: 2, rng: 'virtio-rng-pci', video: null, rtc: 'localtime' })
    assert.deepEqual(arg(args, '-smp'), ['2,sockets=1,cores=2,threads=1'])
    assert.deepEqual(arg(args, '-object'), ['rng-random,id=rng0,filename=/dev/urandom'])
    assert.ok(args.includes('virtio-rng-pci,rng=rng0,id=rng0-dev'))
    assert.ok(!args.some((a) => /VGA|vga/.test(a)), 'no display device')
    assert.deepEqual(arg(args, '-rtc'), ['base=localtime'])
    assert.deepEqual(arg(qemuArgs({ ...PLAN, uefi: { code: '/ovmf/code.fd', vars: '/i/nvram.fd' } }), '-drive'), ['if=pflash,format=raw,readonly=on,file=/ovmf/code.fd', 'if=pflash,format=raw,file=/i/nvram.fd'])
    const flavor = (vcpus: number, extra_specs: Record<string, string> = {}) => ({ id: '1', name: 'f', vcpus, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs })
    const topo = (vcpus: number, extra: Record<string, string>, props: Record<string, string>) => cpuTopology({ serverId: 's', instanceName: 'i', imageId: 'i', hostname: null, userData: null, flavor: flavor(vcpus, extra), image: image(props) })
    assert.equal(topo(4, {}, {}), undefined, 'nothing set: QEMU picks')
    assert.deepEqual(topo(4, {}, { hw_cpu_sockets: '2' }), { sockets: 2, cores: 2, threads: 1 })
    assert.deepEqual(topo(4, { 'hw:cpu_threads': '2' }, {}), { sockets: 2, cores: 1, threads: 2 })
    assert.deepEqual(topo(4, { 'hw:cpu_sockets': '2' }, { hw_cpu_sockets: '1' }), { sockets: 1, cores: 4, threads: 1 })
    assert.throws(() => topo(4, { 'hw:cpu_sockets': '1' }, { hw_cpu_sockets: '2' }), /exceeds the flavor's limit/)
    assert.throws(() => topo(4, {}, { hw_cpu_sockets: '3' }), /cannot give the flavor's 4 vCPUs/)
    assert.throws(() => topo(4, {}, { hw_cpu_threads: '0' }), /not a positive integer/)
    assert.throws(() => imageHardware(image({ hw_disk_bus: 'floppy' })), /hw_disk_bus=floppy is not supported/)
    for (const inherited of ['constructor', 'toString', '__proto__']) {
      assert.throws(() => imageHardware(image({ hw_disk_bus: inherited })), /hw_disk_bus=.* is not supported/, inherited)
      assert.throws(() => imageHardware(image({ hw_vif_model: inherited })), /hw_vif_model=.* is not supported/, inherited)
    }
    assert.throws(() => imageHardware(image({ hw_machine_type: 'pc; rm -rf /' })), /hw_machine_type/)
    assert.throws(() => qemuArgs({ ...PLAN, machine: 'q35' }), /q35 machines have no IDE bus/)
  })

  it('reads hw_qemu_guest_agent and os_require_quiesce as Nova\'s flexible booleans and gives the agent its channel', () => {
    const image = (properties: Record<string, string>): GuestImageRef => ({ id: 'i', diskFormat: 'qcow2', containerFormat: 'bare', size: 1, virtualSize: 1, checksum: null, osHashAlgo: null, osHashValue: null, properties })
    for (const yes of ['yes', 'True', '1', 'on']) assert.equal(imageHardware(image({ hw_qemu_guest_agent: yes })).guestAgent, true, yes)
    for (const no of ['no', 'False', '0', 'off', '']) assert.equal(imageHardware(image({ hw_qemu_guest_agent: no })).guestAgent, false, no)
    assert.equal(imageHardware(image({})).guestAgent, false, 'no agent unless the image says so')
    assert.equal(imageHardware(image({ os_require_quiesce: 'yes' })).requireQuiesce, true)
    assert.throws(() => imageHardware(image({ hw_qemu_guest_agent: 'maybe' })), /hw_qemu_guest_agent=maybe is not supported/)
    assert.throws(() => imageHardware(image({ os_require_quiesce: 'toString' })), /os_require_quiesce=tostring is not supported/)
    assert.ok(!qemuArgs(PLAN).some((a) => /virtio-serial|guest_agent/.test(a)), 'no channel without the property')
    const args = qemuArgs({ ...PLAN, guestAgentSocket: '/run/x,y.qga' })
    assert.ok(arg(args, '-device').includes('virtio-serial-pci,id=virtio-serial0'))
    assert.ok(arg(args, '-chardev').includes('socket,id=qga0,path=/run/x,,y.qga,server=on,wait=off'))
    assert.ok(arg(args, '-device').includes('virtserialport,bus=virtio-serial0.0,nr=1,chardev=qga0,id=channel0,name=org.qemu.guest_agent.0'))
  })

  it("reads a volume-booted guest's hardware, CPU topology and login user from its volume's image metadata, as from an image", () => {
    const image = (properties: Record<string, string>): GuestImageRef => ({ id: 'i', diskFormat: 'qcow2', containerFormat: 'bare', size: 1, virtualSize: 1, checksum: null, osHashAlgo: null, osHashValue: null, properties })
    const props = { hw_qemu_guest_agent: 'yes', os_admin_user: 'debian', hw_cpu_sockets: '2' }
    const flavor = { id: '1', name: 'm1.small', vcpus: 2, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} }
    for (const guest of [{ image: image(props) }, { image: null, bootVolumeImage: props }]) {
      assert.equal(guestHardware(guest).guestAgent, true)
      assert.equal(adminUser(guest), 'debian')
      assert.deepEqual(cpuTopology({ serverId: 's', instanceName: 'i', imageId: '', hostname: null, userData: null, flavor, ...guest }), { sockets: 2, cores: 1, threads: 1 })
    }
    assert.equal(adminUser({ image: null, bootVolumeImage: { os_type: 'windows' } }), 'Administrator')
    assert.equal(adminUser({ image: null, bootVolumeImage: null }), 'root')
  })
})

describe('the guest agent client', () => {
  /** A fake agent on a unix socket: `answer` gets each line the client sent and writes what the agent would. */
  const fakeAgent = async (answer: (line: string, socket: Socket) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-qga-'))
    const path = join(dir, 'qga.sock')
    const received: string[] = []
    const server = createServer((socket) => {
      let buffer = ''
      socket.on('data', (b: Buffer) => {
        // The 0xFF that resets the agent's parser is no line of its own.
        buffer += b.toString('latin1').replace(/\xff/g, '')
        for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
          const line = buffer.slice(0, i)
          buffer = buffer.slice(i + 1)
          received.push(line)
          answer(line, socket)
        }
      })
    })
    await new Promise<void>((resolve) => server.listen(path, resolve))
    return { path, received, close: () => (server.close(), rmSync(dir, { recursive: true, force: true })) }
  }

  it('synchronises past stale answers, then runs commands and reports the agent\'s errors', async () => {
    const agent = await fakeAgent((line, socket) => {
      const message = JSON.parse(line) as { execute: string; arguments?: { id?: number } }
      if (message.execute === 'guest-sync-delimited') {
        // An earlier client's answers arrive first: a plain one, then an earlier sync's with another id.
        socket.write('{"return": {}}\n\xff{"return": 7}\n', 'latin1')
        socket.write(Buffer.concat([Buffer.from([0xff]), Buffer.from(JSON.stringify({ return: message.arguments!.id }) + '\n')]))
      } else if (message.execute === 'guest-info') socket.write('{"return": {"version": "7.2.0"}}\n')
      else socket.write('{"error": {"class": "CommandNotFound", "desc": "no such command"}}\n')
    })
    try {
      const client = await GuestAgentClient.connect(agent.path, 2000)
      assert.deepEqual(await client.execute('guest-info'), { version: '7.2.0' })
      await assert.rejects(client.execute('guest-nothing'), (err: unknown) => err instanceof GuestAgentError && err.errorClass === 'CommandNotFound')
      client.close()
    } finally {
      agent.close()
    }
  })

  it('gives up on a channel nobody answers on within its timeout, and on one that is not there', async () => {
    const silent = await fakeAgent(() => {})
    try {
      const started = Date.now()
      await assert.rejects(GuestAgentClient.connect(silent.path, 500), (err: unknown) => err instanceof GuestAgentUnavailable && /not responding/.test(err.message))
      assert.ok(Date.now() - started < 3000, 'bounded by the sync timeout')
    } finally {
      silent.close()
    }
    await assert.rejects(GuestAgentClient.connect('/nonexistent/qga.sock', 500), GuestAgentUnavailable)
    // A command whose answer never comes: a timeout, and the connection is not used again.
    const mute = await fakeAgent((line, socket) => {
      const message = JSON.parse(line) as { execute: string; arguments?: { id?: number } }
      if (message.execute === 'guest-sync-delimited') socket.write(`\xff${JSON.stringify({ return: message.arguments!.id })}\n`, 'latin1')
    })
    try {
      const client = await GuestAgentClient.connect(mute.path, 2000)
      await assert.rejects(client.execute('guest-fsfreeze-freeze', undefined, 300), /not responding \(no answer to guest-fsfreeze-freeze/)
      await assert.rejects(client.execute('guest-info'), GuestAgentUnavailable)
      // A command that answers nothing when it works (guest-shutdown) is success on silence.
      const again = await GuestAgentClient.connect(mute.path, 2000)
      await again.sendWithoutAnswer('guest-shutdown', { mode: 'powerdown' }, 300)
      again.close()
    } finally {
      mute.close()
    }
  })
})

describe('the console log', () => {
  it('rotates past its limit and reads the newest bytes across both files, or the last lines', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcc-console-'))
    try {
      const log = join(dir, 'console.log')
      writeFileSync(log, Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n') + '\n')
      assert.equal(rotateConsoleLog(log, 100), true)
      assert.equal(statSync(log).size, 0)
      writeFileSync(log, 'line 100\nline 101\n')
      assert.equal(readConsoleLog(log, 3), 'line 99\nline 100\nline 101\n')
      assert.match(readConsoleLog(log), /^line 0\n[\s\S]*line 101\n$/)
      assert.equal(readConsoleLog(log, 0), '')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

const missing = realGuestsMissing()

describe('the QEMU driver with real guests', { skip: missing }, () => {
  let image: GuestImage
  let work: string
  let guest: GuestImageRef
  const files = new Map<string, string>()
  const opens: string[] = []
  const roots: string[] = []
  const driver = async (options: Partial<ConstructorParameters<typeof QemuDriver>[0]> = {}) => {
    const root = options.root ?? mkdtempSync(join(tmpdir(), 'pcc-qemu-host-'))
    if (!roots.includes(root)) roots.push(root)
    const d = new QemuDriver({
      hostname: 'qemu-test', root, vcpus: 2, memoryMb: 4096, diskGb: 20, shutdownTimeoutMs: 20_000,
      images: { open: async (img) => (opens.push(img.id), createReadStream(files.get(img.id)!)) },
      ...options,
    })
    await d.start()
    return d
  }
  const spec = (serverId: string, over: Partial<GuestSpec> = {}, userData?: string): GuestSpec => ({
    serverId, instanceName: 'instance-00000001', imageId: guest.id, hostname: 'vm', userData: null, image: guest,
    flavor: { id: '1', name: 'm1.tiny', vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0, rxtx_factor: 1, extra_specs: {} },
    configDrive: Object.fromEntries(Object.entries(metadataFiles(facts(serverId, userData))).map(([k, v]) => [k, v.toString('base64')])),
    ...over,
  })
  const waitConsole = async (d: QemuDriver, id: string, pattern: RegExp, ms = 90_000) => {
    const deadline = Date.now() + ms
    let text = ''
    while (Date.now() < deadline) {
      text = await d.consoleOutput(id).catch(() => '')
      if (pattern.test(text)) return text
      await new Promise((r) => setTimeout(r, 200))
    }
    throw new Error(`${pattern} not seen; console:\n${text.slice(-2000)}`)
  }
  const waitPower = async (d: QemuDriver, id: string, power: number, ms = 30_000) => {
    const deadline = Date.now() + ms
    while ((await d.info(id))?.powerState !== power) {
      if (Date.now() > deadline) throw new Error(`power state ${(await d.info(id))?.powerState}, not ${power}`)
      await new Promise((r) => setTimeout(r, 200))
    }
  }

  before(async () => {
    image = await guestImage()
    work = mkdtempSync(join(tmpdir(), 'pcc-qemu-driver-'))
    guest = fileImage('guest-image', image.disk.path, 'qcow2')
    files.set('guest-image', image.disk.path)
  })
  after(async () => {
    for (const r of roots) await killQemusUnder(r)
    for (const r of [...roots, work]) rmSync(r, { recursive: true, force: true })
  })

  it('tries KVM with a real guest once per boot of the host and says which accelerator it chose and why', async () => {
    const started = Date.now()
    const choice = await probeAccelerator({ binary: 'qemu-system-x86_64', timeoutMs: 3000 })
    assert.ok(Date.now() - started < 10_000, 'the probe is bounded')
    assert.ok(['kvm', 'tcg'].includes(choice.accel))
    assert.ok(choice.reason.length > 10, choice.reason)
    if (!existsSync('/dev/kvm')) assert.equal(choice.accel, 'tcg')
    const d = await driver()
    // Only the private directories are 0700: their parents keep the default mode, so dnsmasq (which drops to
    // nobody) still reaches var/lib/pcc/dhcp made after them, instead of keeping root privileges.
    for (const dir of ['var', 'var/lib', 'var/lib/pcc']) assert.equal(statSync(join(d.options.root, dir)).mode & 0o777, 0o777 & ~process.umask(), `${dir} keeps the default mode`)
    for (const dir of ['var/lib/pcc/instances', 'var/lib/pcc/images']) assert.equal(statSync(join(d.options.root, dir)).mode & 0o777, 0o700, dir)
    const cap = await d.capacity()
    assert.equal(cap.hypervisorType, 'QEMU')
    assert.ok(cap.hypervisorVersion >= 7_000_000)
    assert.equal(cap.cpuInfo.accelerator, d.accel.accel)
    const restarted = await driver({ root: d.options.root })
    assert.equal(restarted.accel.accel, d.accel.accel)
    assert.match(restarted.accel.reason, /kept for this boot/, 'a restarted driver does not try a guest again')
  })

  it('fetches an image once per host, checks its digest and refuses what is not a plain disk of its format', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pcc-qemu-cache-'))
    roots.push(root)
    const paths = new HostPaths(root)
    const cache = new ImageCache(paths, { open: async (img) => (opens.push(img.id), createReadStream(files.get(img.id)!)) })
    opens.length = 0
    await Promise.all([cache.get(guest), cache.get(guest), cache.get(guest)])
    assert.deepEqual(opens, ['guest-image'], 'one download for concurrent users')
    assert.equal((await cache.get(guest)).virtualSize, image.diskVirtualSize)

    const tampered = { ...guest, id: 'tampered', osHashValue: 'ab'.repeat(64) }
    files.set('tampered', image.disk.path)
    await assert.rejects(cache.get(tampered), /tampered failed verification: its sha512 is/)
    const raw = join(work, 'raw-but-qcow2')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', raw, '16M'])
    files.set('raw-but-qcow2', raw)
    await assert.rejects(cache.get(fileImage('raw-but-qcow2', raw, 'raw')), /declared raw but holds a qcow2 image/)
    const backed = join(work, 'backed')
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', image.disk.path, backed])
    files.set('backed', backed)
    await assert.rejects(cache.get(fileImage('backed', backed, 'qcow2')), /has a backing file/)
    assert.deepEqual(readdirSync(paths.images).sort(), ['guest-image', 'guest-image.json'], 'nothing left of refused images')

    // Pruning: an image in use stays; an unused one goes once old enough; so does a download that died long ago.
    writeFileSync(join(paths.images, 'dead.part'), 'half an image')
    const old = new Date(Date.now() - 2 * 3_600_000)
    utimesSync(join(paths.images, 'dead.part'), old, old)
    assert.deepEqual(cache.prune(new Set(['guest-image']), 0), [])
    assert.deepEqual(cache.prune(new Set(), 60_000), [], 'used a moment ago')
    assert.deepEqual(cache.prune(new Set(), 0), ['guest-image'])
    assert.deepEqual(readdirSync(paths.images), [])
  })

  it('finds its guests again after a restart (a new driver on the same root), still running', async () => {
    const id = '00000000-0000-4000-8000-0000000d0001'
    const first = await driver()
    await first.spawn(spec(id))
    await waitConsole(first, id, /pcc-guest: ready/)
    for (const dir of ['var/lib/pcc/instances', `var/lib/pcc/instances/${id}`, 'var/lib/pcc/images']) {
      assert.equal(statSync(join(first.options.root, dir)).mode & 0o077, 0, `${dir} is root's alone (the config drive's admin password, guest memory, private images)`)
    }
    const again = await driver({ root: first.options.root })
    assert.equal((await again.info(id))!.powerState, POWER.RUNNING)
    assert.deepEqual((await again.listGuests()).map((g) => g.serverId), [id])
    // Listing (every heartbeat) does not ask the monitor again: it answers at once while another client holds it.
    const holder = connect(join(first.options.root, 'run/pcc', `${id}.qmp`))
    await new Promise((resolve) => holder.once('data', resolve))
    try {
      const started = Date.now()
      assert.deepEqual((await again.listGuests()).map((g) => [g.serverId, g.powerState]), [[id, POWER.RUNNING]])
      assert.ok(Date.now() - started < 2000, `listed in ${Date.now() - started} ms`)
    } finally {
      holder.destroy()
    }
    await again.powerOff(id)
    assert.equal((await again.info(id))!.powerState, POWER.SHUTDOWN)
    assert.match(await again.consoleOutput(id), /pcc-guest: power button: powering off/, 'a graceful stop: the guest itself powered off')
    await again.destroy(id)
    assert.deepEqual(qemuLeftovers(first.options.root, id), [])
  })

  it('sees a guest that powered itself off as SHUTDOWN and one that crashed as CRASHED', async () => {
    const d = await driver()
    const off = '00000000-0000-4000-8000-0000000d0002'
    const crash = '00000000-0000-4000-8000-0000000d0003'
    await d.spawn(spec(off, {}, '#!/bin/sh\nsleep 1\nsync\npoweroff -f\n'))
    await d.spawn(spec(crash, {}, '#!/bin/sh\nsleep 1\necho c > /proc/sysrq-trigger\n'))
    await waitPower(d, off, POWER.SHUTDOWN, 90_000)
    await waitPower(d, crash, POWER.CRASHED, 90_000)
    assert.match(await d.consoleOutput(crash), /Kernel panic/)
    await d.destroy(off)
    await d.destroy(crash)
  })

  it('stops a guest that ignores ACPI: a clean wait, then hard, and the guest is SHUTDOWN', async () => {
    // A short clean wait: how long it may be at most (inside the command the control plane waits for) is the
    // first test's; this one shows the wait and the hard stop after it with a real guest.
    const d = await driver({ shutdownTimeoutMs: 6_000 })
    const id = '00000000-0000-4000-8000-0000000d0009'
    await d.spawn(spec(id, {}, '#!/bin/sh\nkillall acpid\necho "pcc-test: acpid stopped"\n'))
    // The script's end, not its text: the guest first echoes its user data (`pcc-guest: user-data: echo "pcc-test: …"`).
    await waitConsole(d, id, /pcc-guest: user-data exit 0/)
    const started = Date.now()
    await d.powerOff(id)
    const took = Date.now() - started
    assert.equal((await d.info(id))!.powerState, POWER.SHUTDOWN)
    assert.ok(took >= cleanStopMs(6_000) - 1000, `it waited for a clean stop first (${took} ms)`)
    assert.doesNotMatch(await d.consoleOutput(id), /pcc-guest: power button/, 'the guest never saw the button')
    await d.destroy(id)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])
  })

  it('honours hw_disk_bus, hw_machine_type, hw_cdrom_bus, hw_scsi_model, hw_rng_model, hw_video_model and the CPU topology, and gives the flavor ephemeral and swap disks', async () => {
    const d = await driver()
    const id = '00000000-0000-4000-8000-0000000d0004'
    const props = {
      ...guest, id: 'guest-q35',
      properties: { hw_machine_type: 'q35', hw_disk_bus: 'scsi', hw_cdrom_bus: 'virtio', hw_scsi_model: 'virtio-scsi', hw_rng_model: 'virtio', hw_video_model: 'none', hw_cpu_cores: '2' },
    }
    files.set('guest-q35', image.disk.path)
    // What the guest sees of its hardware: the kernel's hardware RNG, its CPU packages/cores/threads, and how many
    // display controllers (PCI class 03) it has.
    const report = [
      '#!/bin/sh',
      'echo "pcc-guest: hw rng $(cat /sys/class/misc/hw_random/rng_current)"',
      't=/sys/devices/system/cpu/cpu*/topology',
      'echo "pcc-guest: hw cpus $(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l) packages $(cat $t/physical_package_id | sort -u | wc -l) cores $(cat $t/core_id | sort -u | wc -l) thread-siblings $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)"',
      'echo "pcc-guest: hw displays $(cat /sys/bus/pci/devices/*/class | grep -c ^0x03)"',
      '',
    ].join('\n')
    await d.spawn(spec(id, { image: props, imageId: props.id, flavor: { ...spec(id).flavor, vcpus: 2, ephemeral: 1, swap: 64, extra_specs: { 'hw:cpu_cores': '2' } } }, report))
    const text = await waitConsole(d, id, /pcc-guest: user-data exit/, 150_000)
    assert.match(text, /pcc-guest: hw rng virtio_rng\.0/, 'virtio-rng is the guest\'s hardware RNG')
    assert.match(text, /pcc-guest: hw cpus 2 packages 1 cores 2 thread-siblings 0\r?\n/, 'one socket of two cores')
    assert.match(text, /pcc-guest: hw displays 0\r?\n/, 'no display device')
    assert.match(text, /pcc-guest: firmware bios/, 'SeaBIOS by default')
    assert.match(text, /pcc-guest: user-data exit 0/)
    // The kernel names SCSI disks in the order their probes finish, which varies from boot to boot: the sizes tell
    // the disks apart (root and ephemeral 1 GiB each, swap 64 MiB).
    assert.match(text, /pcc-guest: disk \/dev\/sd[a-c] mounted/, 'root disk on SCSI')
    const scsiSizes = [...text.matchAll(/pcc-guest: block sd[a-z] (\d+)/g)].map((m) => Number(m[1])).sort((a, b) => a - b)
    assert.deepEqual(scsiSizes, [67108864, 1073741824, 1073741824], 'root, ephemeral 1 GiB and swap 64 MiB on SCSI')
    assert.match(text, /pcc-guest: config-drive \/dev\/vd/, 'the config drive as a virtio disk')
    assert.match(text, /pcc-guest: name vm-0004/)

    // A NIC hot-plugged into one of q35's root ports: a restore of the saved memory needs it in the same port, a
    // fresh start places it as any host would, and live migration waits for that fresh start.
    const nic = { portId: '9c3a7d4e-2f3a-4f00-9abc-000000000003', macAddress: 'fa:16:3e:00:00:33', networkId: 'n1', mtu: 1450 }
    const qemuArgv = () => readFileSync(`/proc/${readFileSync(join(d.options.root, 'var/lib/pcc/instances', id, 'qemu.pid'), 'utf8').trim()}/cmdline`, 'utf8').split('\0')
    const nicArg = () => qemuArgv().find((a) => a.includes(`mac=${nic.macAddress}`))
    await d.attachNic(id, nic)
    await waitConsole(d, id, /nic fa:16:3e:00:00:33 added/)
    await assert.rejects(d.liveMigrateTo(id, { driver: 'qemu' }), (err: unknown) => err instanceof DriverError && err.code === 409 && /hot-plugged into a PCIe root port/.test(err.message))
    await d.suspend(id)
    await d.resume(id)
    assert.equal((await d.info(id))!.powerState, POWER.RUNNING)
    assert.match(nicArg() ?? '', /,bus=hotplug\d,addr=0$/, 'restored with the NIC in the root port it was plugged into')
    const restored = await d.consoleOutput(id)
    await d.detachNic(id, nic.portId)
    const after = await waitConsole(d, id, /nic fa:16:3e:00:00:33 removed/)
    assert.doesNotMatch(after.slice(restored.length), /userspace up/, 'the guest ran on from its saved memory')
    await d.attachNic(id, nic)
    await d.reboot(id, 'HARD')
    assert.ok(nicArg() && !nicArg()!.includes('bus='), `a fresh start places the NIC as the command line does: ${nicArg()}`)
    await d.destroy(id)
  })

  it('boots hw_firmware_type=uefi under OVMF with a variable store of its own', async () => {
    const d = await driver()
    const id = '00000000-0000-4000-8000-0000000d0009'
    const props = { ...guest, id: 'guest-uefi', properties: { hw_firmware_type: 'uefi' } }
    files.set('guest-uefi', image.disk.path)
    // OVMF and the kernel's EFI stub need more than the 128 MiB the other guests get.
    await d.spawn(spec(id, { image: props, imageId: props.id, flavor: { ...spec(id).flavor, ram: 256 } }))
    const text = await waitConsole(d, id, /pcc-guest: ready/, 150_000)
    assert.match(text, /BdsDxe: /, 'OVMF\'s boot manager wrote to the serial console')
    assert.match(text, /pcc-guest: firmware uefi/, 'the guest kernel sees EFI firmware')
    assert.ok(existsSync(join(d.options.root, 'var/lib/pcc/instances', id, 'nvram.fd')), 'its own copy of the variable store')
    await d.destroy(id)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])
  })

  it('with hw_qemu_guest_agent=yes: sets the admin password, quiesces a snapshot and shuts down through the agent', async () => {
    const logs: string[] = []
    const d = await driver({ log: (level, message, fields) => logs.push(`${level} ${message} ${JSON.stringify(fields)}`) })
    const id = '00000000-0000-4000-8000-0000000d000b'
    const props = { ...guest, id: 'guest-qga', properties: { hw_qemu_guest_agent: 'yes', os_require_quiesce: 'yes' } }
    files.set('guest-qga', image.disk.path)
    // The guest's evidence: an ext4 file system the agent can freeze (the ephemeral disk; the image's own FAT
    // cannot be frozen), and root's password hash printed whenever chpasswd changes it.
    const report = [
      '#!/bin/sh',
      'mkdir -p /run/eph && mount /dev/vdb /run/eph && echo "pcc-test: ext4 mounted"',
      'last=$(awk -F: \'$1 == "root" { print $2 }\' /etc/passwd)',
      'while sleep 0.5; do',
      '  now=$(awk -F: \'$1 == "root" { print $2 }\' /etc/passwd)',
      '  [ "$now" != "$last" ] && echo "pcc-test: root-hash $now" && last=$now',
      'done',
      '',
    ].join('\n')
    await d.spawn(spec(id, { image: props, imageId: props.id, flavor: { ...spec(id).flavor, ephemeral: 1 } }, report))
    // (The line itself, not the guest's echo of its user data, where a quote follows it.)
    const booted = await waitConsole(d, id, /pcc-test: ext4 mounted\r?\n/, 150_000)
    assert.match(booted, /pcc-guest: guest-agent \/dev\/vport\d+p1/, 'the guest found its agent port and started the agent')
    const password = 'n3w pass:with "quotes"'
    await d.setAdminPassword(id, password)
    // (A crypt hash, not the guest's echo of its user data.)
    const changed = await waitConsole(d, id, /pcc-test: root-hash \$6\$\S+/, 30_000)
    const hash = /pcc-test: root-hash (\$6\$\S+)/.exec(changed)![1]
    const salt = hash.split('$')[2]
    assert.equal(execFileSync('openssl', ['passwd', '-6', '-salt', salt, '-stdin'], { input: password }).toString().trim(), hash, "root's hash in the guest is the new password's")

    const snap = await d.snapshot(id)
    snap.data.resume()
    const frozen = await waitConsole(d, id, /pcc-guest: fsfreeze thaw/, 30_000)
    assert.match(frozen, /pcc-guest: fsfreeze freeze\r?\n[\s\S]*pcc-guest: fsfreeze thaw/, 'the agent froze the guest, then thawed it')
    assert.ok(logs.some((l) => /guest file systems frozen for the snapshot .*"frozen":[1-9]/.test(l)), logs.join('\n'))
    assert.ok(logs.some((l) => /guest file systems thawed after the snapshot/.test(l)))
    // The freeze of a volume-backed createImage: it lasts from quiesce to unquiesce.
    await d.quiesce(id)
    assert.match(await waitConsole(d, id, /(pcc-guest: fsfreeze freeze\r?\n[\s\S]*){2}/, 30_000), /fsfreeze thaw[\s\S]*fsfreeze freeze\r?\n(?![\s\S]*fsfreeze thaw)/, 'frozen, not thawed yet')
    await d.unquiesce(id)
    await waitConsole(d, id, /(pcc-guest: fsfreeze thaw[\s\S]*){2}/, 30_000)
    assert.ok(logs.some((l) => /guest file systems frozen for the volume snapshots .*"frozen":[1-9]/.test(l)), logs.join('\n'))

    const started = Date.now()
    await d.powerOff(id)
    assert.equal((await d.info(id))!.powerState, POWER.SHUTDOWN)
    const text = await d.consoleOutput(id)
    assert.match(text, /pcc-guest: guest agent shutdown: powering off/, 'the guest shut itself down when the agent asked')
    assert.doesNotMatch(text, /pcc-guest: power button/, 'no ACPI needed')
    assert.ok(Date.now() - started < 20_000, `a clean stop in ${Date.now() - started} ms`)
    for (const where of [text, logs.join('\n'), readFileSync(join(d.options.root, 'var/lib/pcc/instances', id, 'guest.json'), 'utf8')]) assert.ok(!where.includes(password), 'the password reaches no log')
    await d.destroy(id)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])
  })

  it('without an agent answering: 409s for the password and for a snapshot that requires quiescing, and a snapshot that only may quiesce goes on', async () => {
    // A silent agent costs each call its sync wait: 2 s here rather than a host's 10 s.
    const d = await driver({ shutdownTimeoutMs: 30_000, guestAgentSyncMs: 2_000 })
    const plain = '00000000-0000-4000-8000-0000000d000c'
    const silent = '00000000-0000-4000-8000-0000000d000d'
    const noAgent = { ...guest, id: 'guest-no-agent', properties: { os_require_quiesce: 'yes' } }
    const agentProp = { ...guest, id: 'guest-qga-silent', properties: { hw_qemu_guest_agent: 'yes' } }
    files.set('guest-no-agent', image.disk.path)
    files.set('guest-qga-silent', image.disk.path)
    await d.spawn(spec(plain, { image: noAgent, imageId: noAgent.id }))
    // The channel is there, the agent inside is gone: nothing answers on it. The daemon writes its pid file after
    // init has gone on, so the user data waits for the file, kills the agent and waits until it is gone.
    const killAgent = [
      '#!/bin/sh',
      'while [ ! -s /run/qemu-ga.pid ]; do sleep 0.2; done',
      'pid=$(cat /run/qemu-ga.pid); kill -9 $pid',
      'while kill -0 $pid 2>/dev/null; do sleep 0.2; done',
      'echo "pcc-guest: qemu-ga $pid gone"',
    ].join('\n')
    await d.spawn(spec(silent, { image: agentProp, imageId: agentProp.id }, `${killAgent}\n`))
    assert.match(await waitConsole(d, plain, /pcc-guest: ready/, 150_000), /pcc-guest: guest-agent none/)
    await waitConsole(d, silent, /pcc-guest: qemu-ga \d+ gone/, 150_000)

    const refused = (code: number, pattern: RegExp) => (err: unknown) => err instanceof DriverError && err.code === code && pattern.test(err.message)
    await assert.rejects(d.setAdminPassword(plain, 'secret-1'), refused(409, /QEMU guest agent is not enabled/))
    await assert.rejects(d.snapshot(plain), refused(409, /Quiescing requires the QEMU guest agent/))
    await assert.rejects(d.quiesce(plain), refused(409, /QEMU guest agent is not enabled/))
    await d.unquiesce(plain)
    const started = Date.now()
    await assert.rejects(d.setAdminPassword(silent, 'secret-2'), refused(409, /Unable to set password on instance for user "root": the QEMU guest agent is not responding/))
    assert.ok(Date.now() - started < 8_000, `a silent agent is a fault after its sync wait, not a hang (${Date.now() - started} ms)`)
    await assert.rejects(d.quiesce(silent), refused(409, /Quiescing the guest failed: the QEMU guest agent is not responding/))
    const snap = await d.snapshot(silent)
    snap.data.resume()
    assert.equal((await d.info(silent))!.powerState, POWER.RUNNING)
    // The stop falls back to the power button when the agent does not take the shutdown.
    await d.powerOff(silent)
    assert.match(await d.consoleOutput(silent), /pcc-guest: power button: powering off/)
    await d.destroy(plain)
    await d.destroy(silent)
  })

  it('boots an image with kernel_id and ramdisk_id directly, with its os_command_line', async () => {
    const d = await driver()
    const id = '00000000-0000-4000-8000-0000000d0005'
    files.set('kernel', image.kernel.path)
    files.set('ramdisk', image.ramdisk.path)
    files.set('root-fs', image.rootFs.path)
    const root = { ...fileImage('root-fs', image.rootFs.path, 'qcow2'), properties: { kernel_id: 'kernel', ramdisk_id: 'ramdisk', os_command_line: 'console=ttyS0 pcc.marker=direct-boot' } }
    await d.spawn(spec(id, { image: root, imageId: 'root-fs', kernel: fileImage('kernel', image.kernel.path, 'aki'), ramdisk: fileImage('ramdisk', image.ramdisk.path, 'ari') }))
    const text = await waitConsole(d, id, /pcc-guest: ready/)
    assert.match(text, /pcc-guest: disk \/dev\/vda mounted[\s\S]*pcc-guest: boot 1\r?\n/)
    const cmdline = execFileSync('sh', ['-c', `tr '\\0' ' ' < /proc/$(cat ${join(d.options.root, 'var/lib/pcc/instances', id, 'qemu.pid')})/cmdline`]).toString()
    assert.match(cmdline, /-append console=ttyS0 pcc\.marker=direct-boot/)
    await d.destroy(id)
  })

  it('gives a guest one NIC per port with the port MAC on a tap named after the port, and no tap outlives it', async () => {
    const d = await driver()
    const id = '00000000-0000-4000-8000-0000000d0006'
    const ports = ['7a1e5b2c-0d1e-4f00-9abc-000000000001', '8b2f6c3d-1e2f-4f00-9abc-000000000002'].map((portId, i) => ({ portId, macAddress: `fa:16:3e:00:00:0${i + 1}`, networkId: 'n1', mtu: 1450 }))
    await d.spawn(spec(id, { nics: ports }))
    const text = await waitConsole(d, id, /pcc-guest: ready/)
    assert.match(text, /pcc-guest: nic eth0 fa:16:3e:00:00:01/)
    assert.match(text, /pcc-guest: nic eth1 fa:16:3e:00:00:02/)
    for (const tap of ['tap7a1e5b2c-0d', 'tap8b2f6c3d-1e']) assert.match(execFileSync('ip', ['-o', 'link', 'show', 'dev', tap]).toString(), new RegExp(tap))
    await d.destroy(id)
    for (const tap of ['tap7a1e5b2c-0d', 'tap8b2f6c3d-1e']) assert.throws(() => execFileSync('ip', ['link', 'show', 'dev', tap], { stdio: 'pipe' }), `${tap} went with QEMU`)
  })

  it('fails cleanly: no QEMU binary, a flavor too small for the image, a full disk — nothing left behind', async () => {
    const noQemu = await driver({ binary: 'qemu-system-does-not-exist', accel: 'tcg' })
    const id = '00000000-0000-4000-8000-0000000d0007'
    await assert.rejects(noQemu.spawn(spec(id)), (err: unknown) => err instanceof DriverError && /qemu-system-does-not-exist is not installed/.test(err.message))
    assert.deepEqual(qemuLeftovers(noQemu.options.root, id), [])

    const d = await driver()
    await assert.rejects(d.spawn(spec(id, { flavor: { ...spec(id).flavor, disk: 0.01 } })), /Flavor's disk is too small for requested image/)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])

    // A host root on a 4 MiB file system: the 14 MB image does not fit.
    const small = mkdtempSync(join(tmpdir(), 'pcc-qemu-full-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', small])
    try {
      const full = await driver({ root: small })
      await assert.rejects(full.spawn(spec(id)), /out of disk space|No space left/)
      assert.deepEqual(qemuLeftovers(small, id), [])
      assert.deepEqual(readdirSync(join(small, 'var/lib/pcc/images')), [], 'no partial image left')
    } finally {
      execFileSync('umount', [small])
      rmSync(small, { recursive: true, force: true })
    }
  })

  it('leaves a guest whose memory cannot be saved running, with no part of it on the host', async () => {
    // A host root on a 20 MiB file system: the image and disk fit, the guest's memory does not.
    const small = mkdtempSync(join(tmpdir(), 'pcc-qemu-susp-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', small])
    try {
      const d = await driver({ root: small })
      const id = '00000000-0000-4000-8000-0000000d0009'
      await d.spawn(spec(id))
      await waitConsole(d, id, /pcc-guest: tick 1\b/)
      await assert.rejects(d.suspend(id), (err: unknown) => err instanceof DriverError && /migration failed/.test(err.message))
      assert.equal((await d.info(id))!.powerState, POWER.RUNNING, 'the guest goes on')
      assert.equal(existsSync(join(small, 'var/lib/pcc/instances', id, 'suspend.state')), false, 'no partial memory image')
      const ticks = lastTick(await d.consoleOutput(id))
      await waitConsole(d, id, new RegExp(`pcc-guest: tick ${ticks + 1}\\b`), 20_000)
      await d.destroy(id)
    } finally {
      await killQemusUnder(small)
      execFileSync('umount', [small])
      rmSync(small, { recursive: true, force: true })
    }
  })

  it('takes no disk from another host that points at files of this host, and keeps nothing of a move it cannot finish', async () => {
    const sent = mkdtempSync(join(tmpdir(), 'pcc-qemu-sent-'))
    roots.push(sent)
    const d = await driver({
      transfers: {
        upload: async () => {},
        download: async (_serverId, name) => {
          if (!existsSync(join(sent, name))) throw new Error(`no ${name}`)
          return createReadStream(join(sent, name))
        },
      },
    })
    const id = '00000000-0000-4000-8000-0000000d000a'
    const send = (name: string, args: string[], size = '1G') => {
      rmSync(join(sent, name), { force: true })
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', ...args, join(sent, name), size])
    }
    send('disk', ['-u', '-F', 'qcow2', '-b', '/elsewhere/base'])
    send('disk.local', ['-F', 'raw', '-b', '/etc/hostname'])
    await assert.rejects(d.finishMigration(spec(id), true), /disk received from the source host has a backing file \(\/etc\/hostname\)/)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])
    send('disk.local', ['-o', `data_file=${join(sent, 'data')},data_file_raw=on`])
    await assert.rejects(d.finishMigration(spec(id), true), /external data file/)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])

    // A root disk larger than the flavor cannot shrink: the arrived copy goes.
    rmSync(join(sent, 'disk.local'))
    send('disk', ['-u', '-F', 'qcow2', '-b', '/elsewhere/base'], '2G')
    await assert.rejects(d.finishMigration(spec(id), true), /Unable to resize disk down/)
    assert.deepEqual(qemuLeftovers(d.options.root, id), [])
  })

  it('keeps the boot count on the guest disk across a hard reboot; serves its serial console (a shell answers) and its display (RFB)', async () => {
    const d = await driver()
    const id = '00000000-0000-4000-8000-0000000d0008'
    await d.spawn(spec(id, {}, '#!/bin/sh\ntrue\n'))
    await waitConsole(d, id, /pcc-guest: ready/)
    await d.reboot(id, 'HARD')
    const text = await waitConsole(d, id, /pcc-guest: boot 2\r?\n[\s\S]*pcc-guest: ready/)
    assert.equal(lastBoot(text), 2)

    const serial = await d.openConsole(id, 'serial')
    let typed = ''
    serial.on('data', (b: Buffer) => (typed += b.toString('latin1')))
    const deadline = Date.now() + 30_000
    while (!/pcc-console-\d+ answered/.test(typed) && Date.now() < deadline) {
      serial.write('echo pcc-console-$((6*7)) answered\n')
      await new Promise((r) => setTimeout(r, 1000))
    }
    serial.destroy()
    assert.match(typed, /pcc-console-42 answered/, 'the guest shell ran what was typed')
    const vnc = await d.openConsole(id, 'vnc')
    const hello = await new Promise<string>((resolve) => vnc.once('data', (b: Buffer) => resolve(b.toString('latin1'))))
    vnc.destroy()
    assert.match(hello, /^RFB 003\.008\n/)
    await d.destroy(id)
    await assert.rejects(d.openConsole(id, 'serial'), (err: unknown) => err instanceof DriverError && err.code === 404)
  })
})
