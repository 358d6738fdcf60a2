/**
 * Block I/O measured from inside a real guest, shared by the benches that compare a guest's disks with their limit
 * (volume-io: NBD volumes and qcow2 overlays next to a host file; ceph-guest-io: RBD volumes and root disks next to
 * `rbd bench`). The guest's user data runs busybox dd — sequential 1 MiB and random 4 KiB reads and writes, O_DIRECT —
 * timed from /proc/uptime (10 ms), and prints one line per test. The image has no fio: random I/O is one dd process
 * per I/O, unless the bench gives the guest `rio` (below), a 1 KiB static program that does them all in one process.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { writeConfigDrive } from '../src/host/compute/qemu/config-drive.js'
import { until } from '../src/testkit/compute-api.js'
import { bareGuest, guestImage } from '../src/testkit/qemu.js'
import type { QemuCloud } from '../src/testkit/qemu-cloud.js'

export const MIB_COUNT = 512
export const RANDOM_IOS = 500
/** Where on each disk the tests run: past the guest image's 64 MiB FAT on the root disk. */
export const OFFSET_MIB = 256

/** The tests as a shell function over one disk; prints `pcc-guest: bench <label> <test> <centiseconds>`. */
export const TESTS = `
now() { read u _ < /proc/uptime; echo "$u" | tr -d . | sed 's/^0*//'; }
bench() {
  dev=$1; label=$2
  # One flush first, as a file system's first commit sends: librbd writes through until a guest's first flush
  # (\`rbd cache writethrough until flush\`, for guests too old to flush), and a raw O_DIRECT writer never sends one
  # (busybox dd fsyncs only after a copy: block 0 is copied onto itself).
  dd if=$dev of=$dev bs=4k count=1 conv=notrunc,fsync 2>/dev/null
  t=$(now); dd if=/dev/zero of=$dev bs=1M count=${MIB_COUNT} seek=${OFFSET_MIB} oflag=direct conv=notrunc 2>/dev/null; echo "pcc-guest: bench $label seq-write $(( $(now) - t ))"
  t=$(now); dd if=$dev of=/dev/null bs=1M count=${MIB_COUNT} skip=${OFFSET_MIB} iflag=direct 2>/dev/null; echo "pcc-guest: bench $label seq-read $(( $(now) - t ))"
  i=0; t=$(now)
  if [ -x /rio ]; then /rio $dev w ${RANDOM_IOS} $(( ${OFFSET_MIB} * 256 )) $(( ${MIB_COUNT} * 256 )); else
  while [ $i -lt ${RANDOM_IOS} ]; do dd if=/dev/zero of=$dev bs=4k count=1 seek=$(( ${OFFSET_MIB} * 256 + RANDOM % (${MIB_COUNT} * 256) )) oflag=direct conv=notrunc 2>/dev/null; i=$((i+1)); done; fi
  echo "pcc-guest: bench $label rand-write $(( $(now) - t ))"
  i=0; t=$(now)
  if [ -x /rio ]; then /rio $dev r ${RANDOM_IOS} $(( ${OFFSET_MIB} * 256 )) $(( ${MIB_COUNT} * 256 )); else
  while [ $i -lt ${RANDOM_IOS} ]; do dd if=$dev of=/dev/null bs=4k count=1 skip=$(( ${OFFSET_MIB} * 256 + RANDOM % (${MIB_COUNT} * 256) )) iflag=direct 2>/dev/null; i=$((i+1)); done; fi
  echo "pcc-guest: bench $label rand-read $(( $(now) - t ))"
}
`

/**
 * rio DEV r|w COUNT FIRST_BLOCK BLOCKS: COUNT random 4 KiB O_DIRECT reads or writes among BLOCKS blocks from
 * FIRST_BLOCK, one at a time, in one process — what fio's randread/randwrite at iodepth 1 do. No libc: raw Linux
 * x86-64 syscalls, so the static binary is about 1 KiB and travels in the guest's user data.
 */
const RIO_C = `
typedef unsigned long u64;
static long sys(long n, long a, long b, long c, long d) {
  long r;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
static char buf[4096] __attribute__((aligned(4096)));
static u64 num(const char *s) { u64 n = 0; while (*s >= '0' && *s <= '9') n = n * 10 + (u64)(*s++ - '0'); return n; }
void start(long *sp) {
  char **argv = (char **)(sp + 1);
  int write = argv[2][0] == 'w';
  u64 count = num(argv[3]), first = num(argv[4]), blocks = num(argv[5]), x = 88172645463325252ull;
  long fd = sys(2 /* open */, (long)argv[1], (write ? 2 : 0) | 040000 /* O_DIRECT */, 0, 0);
  if (fd < 0) sys(60 /* exit */, 1, 0, 0, 0);
  for (u64 i = 0; i < count; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    if (sys(write ? 18 /* pwrite64 */ : 17 /* pread64 */, fd, (long)buf, 4096, (long)((first + x % blocks) * 4096)) != 4096) sys(60, 2, 0, 0, 0);
  }
  sys(60, 0, 0, 0, 0);
}
__asm__(".globl _start\\n_start:\\n mov %rsp, %rdi\\n and $-16, %rsp\\n call start\\n");
`

/** Compiles rio with the machine's C compiler (Debian's gcc): the binary's bytes. */
export function compileRio(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'pcc-bench-rio-'))
  try {
    writeFileSync(join(dir, 'rio.c'), RIO_C)
    execFileSync('cc', ['-static', '-nostdlib', '-Os', '-fno-stack-protector', '-fno-pie', '-no-pie', '-fno-asynchronous-unwind-tables', '-Wl,-n', '-Wl,--build-id=none', '-s', '-o', join(dir, 'rio'), join(dir, 'rio.c')])
    return readFileSync(join(dir, 'rio'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The disks a pcc guest benches: the attached volume, then its root disk. */
const PCC_DISKS: [device: string, label: string][] = [['/dev/vdb', 'volume'], ['/dev/vda', 'root']]

/** The guest's user data: rio when given, then wait for the first disk and run the tests on each. */
const guestScript = (rio: Buffer | undefined, disks = PCC_DISKS) => `#!/bin/sh
${rio ? `echo ${rio.toString('base64')} | base64 -d > /rio && chmod +x /rio` : ''}
${TESTS}
while [ ! -b ${disks[0][0]} ]; do sleep 1; done
${disks.map(([device, label]) => `bench ${device} ${label}`).join('\n')}
echo "pcc-guest: bench done"
`

export type IoTest = 'seq-write' | 'seq-read' | 'rand-write' | 'rand-read'

export interface Timing {
  label: string
  test: IoTest
  centiseconds: number
}

export function parseTimings(text: string): Timing[] {
  // Anchored at the end: the guest also echoes its user data (these lines included, ending in `))"`), and a line
  // may start behind the serial shell's prompt.
  return [...text.matchAll(/pcc-guest: bench (\w+) ([\w-]+) (\d+)\r?$/gm)].map((m) => ({ label: m[1], test: m[2] as IoTest, centiseconds: Number(m[3]) }))
}

export const IO_FIGURES: Record<IoTest, { what: string; unit: string; value: (cs: number) => number }> = {
  'seq-write': { what: `sequential write, 1 MiB O_DIRECT, ${MIB_COUNT} MiB`, unit: 'MiB/s', value: (cs) => MIB_COUNT / (cs / 100) },
  'seq-read': { what: `sequential read, 1 MiB O_DIRECT, ${MIB_COUNT} MiB`, unit: 'MiB/s', value: (cs) => MIB_COUNT / (cs / 100) },
  'rand-write': { what: `random 4 KiB write, O_DIRECT, ${RANDOM_IOS} I/Os one at a time`, unit: 'IOPS', value: (cs) => RANDOM_IOS / (cs / 100) },
  'rand-read': { what: `random 4 KiB read, O_DIRECT, ${RANDOM_IOS} I/Os one at a time`, unit: 'IOPS', value: (cs) => RANDOM_IOS / (cs / 100) },
}

export const round1 = (x: number) => Math.round(x * 10) / 10

/**
 * Boots one guest (1 vCPU, 256 MiB) from the image with the tests (and rio) as its user data, attaches the volume, and
 * returns the guest's timings and the accelerator its host chose. The server is deleted before it returns.
 */
export async function guestTimings(cloud: QemuCloud, imageId: string, volumeId: string, rio?: Buffer): Promise<{ timings: Timing[]; accel: string }> {
  const { api } = cloud
  const flavor = await api.createFlavor({ name: 'bench', vcpus: 1, ram: 256, disk: 1 })
  const { id } = await api.create({ name: 'bench', imageRef: imageId, flavorRef: flavor, networks: 'none', user_data: Buffer.from(guestScript(rio)).toString('base64') })
  try {
    const consoleOf = async () => ((await api.action(id, 'os-getConsoleOutput', {})).body?.output as string | undefined) ?? ''
    await until('the guest up', 300_000, async () => (/pcc-guest: ready/.test(await consoleOf()) ? true : undefined), 1000)
    const attached = await api.call('POST', `/servers/${id}/os-volume_attachments`, { volumeAttachment: { volumeId } })
    if (attached.status !== 200) throw new Error(`attach: ${attached.status} ${JSON.stringify(attached.body)}`)
    const text = await until('the guest’s benchmark', 1_800_000, async () => {
      const out = await consoleOf()
      return /^pcc-guest: bench done/m.test(out) ? out : undefined
    }, 2000)
    // The accelerator the driver chose (KVM when a KVM guest works, else TCG), from the agent's own log.
    const accel = /guests run under (\w+)/.exec(readFileSync(join(cloud.hosts[0].root, 'var/log/pcc/agent.log'), 'utf8'))?.[1] ?? 'unknown'
    return { timings: parseTimings(text), accel }
  } finally {
    await api.call('DELETE', `/servers/${id}`).catch(() => {})
    await until('the guest gone', 120_000, async () => ((await api.server(id).catch(() => undefined)) ? undefined : true), 500).catch(() => {})
  }
}

/**
 * The floor of a guest's own cost per I/O: a bare QEMU guest of the same image (no pcc in between, same memory and
 * vCPU) runs the tests on a disk that costs nothing — QEMU's null-co driver completes every request at once — so what
 * it measures is the guest kernel, the emulated virtio queue and QEMU's block layer, which no storage can beat.
 */
export async function nullDiskTimings(accel: 'kvm' | 'tcg', rio?: Buffer): Promise<Timing[]> {
  const image = await guestImage()
  const work = mkdtempSync(join(tmpdir(), 'pcc-bench-null-'))
  const drive = join(work, 'config.iso')
  await writeConfigDrive(drive, {
    'openstack/latest/meta_data.json': JSON.stringify({ uuid: randomUUID(), name: 'bench-null', hostname: 'bench-null' }),
    'openstack/latest/user_data': guestScript(rio, [['/dev/vdb', 'null']]),
    'openstack/latest/network_data.json': JSON.stringify({ links: [], networks: [], services: [] }),
  })
  // The null disk sits past the image's PCI slot: the firmware boots the first disk it finds and the guest calls
  // it vda, so the image stays first.
  const guest = bareGuest({
    disk: image.disk.path, diskFormat: 'qcow2', snapshot: true, configDrive: drive, accel, memoryMb: 256,
    extraArgs: ['-blockdev', `driver=null-co,node-name=null,size=${(OFFSET_MIB + MIB_COUNT) * 1048576}`, '-device', 'virtio-blk-pci,drive=null,addr=0x9'],
  })
  try {
    await guest.waitFor(/^pcc-guest: bench done/m, 1_800_000)
    return parseTimings(guest.console())
  } finally {
    await guest.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

/** Creates an image from the file as the cloud's admin: its id. */
export async function uploadImage(cloud: QemuCloud, file: string, diskFormat: 'qcow2' | 'raw', name = 'pcc-guest'): Promise<string> {
  const img = await cloud.api.other('POST', '/image/v2/images', { name, disk_format: diskFormat, container_format: 'bare' })
  const put = await fetch(`${cloud.server.url}/image/v2/images/${img.body.id}/file`, { method: 'PUT', headers: { 'x-auth-token': cloud.adminToken, 'content-type': 'application/octet-stream' }, body: readFileSync(file) })
  if (put.status !== 204) throw new Error(`image upload: ${put.status} ${await put.text()}`)
  return img.body.id as string
}

/** Uploads the file as an image and waits for a volume of `sizeGb`: the ids. */
export async function imageAndVolume(cloud: QemuCloud, file: string, diskFormat: 'qcow2' | 'raw', sizeGb = 1): Promise<{ imageId: string; volumeId: string }> {
  const { api } = cloud
  const imageId = await uploadImage(cloud, file, diskFormat)
  const vol = await api.other('POST', '/volume/v3/volumes', { volume: { size: sizeGb, name: 'bench' } })
  const volumeId = vol.body.volume.id as string
  await until('the volume', 120_000, async () => ((await api.other('GET', `/volume/v3/volumes/${volumeId}`)).body.volume.status === 'available' ? true : undefined), 250)
  return { imageId, volumeId }
}
