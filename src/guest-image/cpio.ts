/**
 * A cpio archive in the "newc" format the Linux kernel unpacks as an initramfs (kernel docs:
 * early-userspace/buffer-format). Written here rather than with cpio(1) so the image build needs one tool less
 * and its bytes depend only on the entries (fixed owner, times and inode numbers: the same inputs give the same
 * archive, which keeps the image cache key honest).
 */

export type CpioEntry =
  | { path: string; type: 'dir'; mode?: number }
  | { path: string; type: 'file'; data: Buffer; mode?: number }
  | { path: string; type: 'symlink'; target: string }

const TYPE_BITS = { dir: 0o040000, file: 0o100000, symlink: 0o120000 }

function pad4(n: number): number {
  return (4 - (n % 4)) % 4
}

function header(fields: { ino: number; mode: number; nlink: number; size: number; nameSize: number }): Buffer {
  const hex = (n: number) => n.toString(16).padStart(8, '0')
  // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check
  const text = '070701' + [fields.ino, fields.mode, 0, 0, fields.nlink, 0, fields.size, 0, 0, 0, 0, fields.nameSize, 0].map(hex).join('')
  return Buffer.from(text, 'ascii')
}

function record(ino: number, path: string, mode: number, nlink: number, data: Buffer): Buffer[] {
  const name = Buffer.from(`${path}\0`, 'utf8')
  const head = header({ ino, mode, nlink, size: data.length, nameSize: name.length })
  return [head, name, Buffer.alloc(pad4(head.length + name.length)), data, Buffer.alloc(pad4(data.length))]
}

/** The archive of `entries` (paths relative, without a leading slash; parents listed before children). */
export function cpioArchive(entries: CpioEntry[]): Buffer {
  const parts: Buffer[] = []
  entries.forEach((e, i) => {
    const ino = i + 1
    if (e.type === 'dir') parts.push(...record(ino, e.path, TYPE_BITS.dir | (e.mode ?? 0o755), 2, Buffer.alloc(0)))
    else if (e.type === 'file') parts.push(...record(ino, e.path, TYPE_BITS.file | (e.mode ?? 0o644), 1, e.data))
    else parts.push(...record(ino, e.path, TYPE_BITS.symlink | 0o777, 1, Buffer.from(e.target, 'utf8')))
  })
  parts.push(...record(0, 'TRAILER!!!', 0, 1, Buffer.alloc(0)))
  return Buffer.concat(parts)
}
