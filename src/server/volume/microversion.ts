/**
 * Cinder microversions: `OpenStack-API-Version: volume 3.x` (or `latest`) selects one; the answer echoes it.
 * The supported range is declared here once, and the version document is built from it.
 */
import { AppError } from '../../contracts/errors.js'

export const MIN_VOLUME_VERSION = '3.0'
export const MAX_VOLUME_VERSION = '3.64'

export interface VolumeVersion {
  major: number
  minor: number
}

export function parseVersion(text: string): VolumeVersion {
  const [major, minor] = text.split('.').map(Number)
  return { major, minor }
}

export function atLeast(v: VolumeVersion, text: string): boolean {
  const o = parseVersion(text)
  return v.major > o.major || (v.major === o.major && v.minor >= o.minor)
}

export function formatVersion(v: VolumeVersion): string {
  return `${v.major}.${v.minor}`
}

/** The version a request asks for; the minimum when it names none. Throws 406 for one outside the range. */
export function requestedVersion(header: string | string[] | undefined): VolumeVersion {
  const values = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((s) => s.trim())
  const mine = values.find((v) => /^volume\s/i.test(v))
  if (!mine) return parseVersion(MIN_VOLUME_VERSION)
  const wanted = mine.replace(/^volume\s+/i, '').trim()
  if (wanted === 'latest') return parseVersion(MAX_VOLUME_VERSION)
  if (!/^\d+\.\d+$/.test(wanted)) throw new AppError('bad_request', `Invalid API version request: '${wanted}'.`)
  const v = parseVersion(wanted)
  if (!atLeast(v, MIN_VOLUME_VERSION) || !atLeast(parseVersion(MAX_VOLUME_VERSION), wanted)) {
    throw new AppError('not_acceptable', `Version ${wanted} is not supported by the API. Minimum is ${MIN_VOLUME_VERSION} and maximum is ${MAX_VOLUME_VERSION}.`)
  }
  return v
}
