#!/usr/bin/env node
/**
 * Builds the pcc guest image (or finds it in the cache) and prints where its files are:
 *
 *   npm run guest-image -- [--sysroot DIR] [--cache DIR] [--json]
 *
 * --sysroot: where boot/vmlinuz-*, lib/modules/* and bin/busybox are (default /; e.g. a directory filled with
 * `dpkg-deb -x` from `apt-get download linux-image-<release>-cloud-amd64 busybox-static`).
 */
import { parseArgs } from 'node:util'
import { buildGuestImage, GuestImageUnavailable } from './build.js'

const { values } = parseArgs({ options: { sysroot: { type: 'string' }, cache: { type: 'string' }, json: { type: 'boolean' } } })
try {
  const image = await buildGuestImage({ sysroot: values.sysroot, cacheDir: values.cache })
  if (values.json) {
    process.stdout.write(JSON.stringify(image, null, 2) + '\n')
  } else {
    process.stdout.write(
      [
        `pcc guest image ${image.key} (kernel ${image.kernelRelease}) in ${image.dir}`,
        `  disk     ${image.disk.path}  (qcow2, bootable, ${image.disk.size} bytes)`,
        `  kernel   ${image.kernel.path}  (for kernel_id images: disk_format aki)`,
        `  ramdisk  ${image.ramdisk.path}  (for ramdisk_id images: disk_format ari)`,
        `  root-fs  ${image.rootFs.path}  (qcow2 root disk of a kernel/ramdisk image)`,
        '',
      ].join('\n'),
    )
  }
} catch (err) {
  process.stderr.write(`guest-image: ${(err as Error).message}\n`)
  process.exit(err instanceof GuestImageUnavailable ? 2 : 1)
}
