/**
 * A DOS (MBR) partition table written into sector 0 of a disk image file: what `sfdisk` would write, without
 * needing it or a loop device. Entries use LBA only (CHS fields say "beyond 1024 cylinders", as modern tools
 * write them); the boot code comes from the caller (syslinux's mbr.bin: it boots the active partition).
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs'

export const SECTOR = 512

export interface MbrPartition {
  /** First sector (LBA). */
  start: number
  /** Length in sectors. */
  sectors: number
  /** Partition type byte: 0x0c FAT32 (LBA), 0x83 Linux. */
  type: number
  /** The active partition is the one the MBR boot code starts. */
  bootable?: boolean
}

/** CHS "beyond addressable": tools that write LBA-only tables put this in both CHS fields. */
const CHS_MAX = [0xfe, 0xff, 0xff]

/** The 512-byte sector 0: boot code (at most 440 bytes), disk signature, up to four partitions, 0x55AA. */
export function mbrSector(bootCode: Buffer, signature: number, partitions: MbrPartition[]): Buffer {
  if (bootCode.length > 440) throw new Error(`MBR boot code is ${bootCode.length} bytes; at most 440 fit`)
  if (partitions.length > 4) throw new Error('an MBR holds at most four primary partitions')
  const sector = Buffer.alloc(SECTOR)
  bootCode.copy(sector, 0)
  sector.writeUInt32LE(signature >>> 0, 440)
  partitions.forEach((p, i) => {
    if (p.start < 1 || p.sectors < 1 || p.start + p.sectors > 0xffffffff) throw new Error(`partition ${i + 1} is out of the MBR's range`)
    const at = 446 + i * 16
    sector[at] = p.bootable ? 0x80 : 0x00
    sector.set(CHS_MAX, at + 1)
    sector[at + 4] = p.type
    sector.set(CHS_MAX, at + 5)
    sector.writeUInt32LE(p.start, at + 8)
    sector.writeUInt32LE(p.sectors, at + 12)
  })
  sector[510] = 0x55
  sector[511] = 0xaa
  return sector
}

/** Writes sector 0 of `file` (which must already have its full size). */
export function writeMbr(file: string, sector: Buffer): void {
  const fd = openSync(file, 'r+')
  try {
    writeSync(fd, sector, 0, SECTOR, 0)
  } finally {
    closeSync(fd)
  }
}

/** The partitions of `file`'s MBR, as read back (what a guest's kernel will see). */
export function readMbr(file: string): MbrPartition[] {
  const sector = Buffer.alloc(SECTOR)
  const fd = openSync(file, 'r')
  try {
    readSync(fd, sector, 0, SECTOR, 0)
  } finally {
    closeSync(fd)
  }
  if (sector[510] !== 0x55 || sector[511] !== 0xaa) return []
  const out: MbrPartition[] = []
  for (let i = 0; i < 4; i++) {
    const at = 446 + i * 16
    if (sector[at + 4] === 0) continue
    out.push({ start: sector.readUInt32LE(at + 8), sectors: sector.readUInt32LE(at + 12), type: sector[at + 4], bootable: sector[at] === 0x80 })
  }
  return out
}
