/**
 * The bytes of a simulated volume, for uploads to the image service (os-volume_upload_image). The simulated
 * backend stores no data, so a volume reads as a blank disk of its size: as qcow2, a few KiB describing that disk
 * (labelled with the volume, so two uploads differ); as raw, its full size of zeros, streamed.
 */
import { Readable } from 'node:stream'
import { qcow2Image } from '../image/qcow2.js'
import type { VolumeRecord } from './model.js'

export const UPLOAD_FORMATS = ['raw', 'qcow2'] as const
export type UploadFormat = (typeof UPLOAD_FORMATS)[number]

const GIB = 1024 ** 3
const CHUNK = Buffer.alloc(1 << 20)

export function simulatedVolumeData(volume: Pick<VolumeRecord, 'id' | 'size'>, format: UploadFormat): Readable {
  if (format === 'qcow2') return Readable.from([qcow2Image({ virtualSize: volume.size * GIB, label: `pcc simulated volume\nvolume ${volume.id}\n` })])
  const chunks = (volume.size * GIB) / CHUNK.length
  return Readable.from(
    (function* zeros() {
      for (let n = 0; n < chunks; n++) yield CHUNK
    })(),
  )
}
