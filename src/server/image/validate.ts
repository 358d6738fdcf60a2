/** Checks of image attribute values, shared by create and update; each error names the field. */
import { AppError, badRequest } from '../../contracts/errors.js'
import { CONTAINER_FORMATS, DISK_FORMATS, VISIBILITIES } from './model.js'

export interface CoreAttributes {
  name?: string | null
  visibility?: string
  protected?: boolean
  os_hidden?: boolean
  disk_format?: string | null
  container_format?: string | null
  min_disk?: number
  min_ram?: number
  tags?: string[]
}

const MAX_PROPERTIES = 128

function nullableString(field: string, value: unknown, max = 255): string | null {
  if (value === null) return null
  if (typeof value !== 'string') throw badRequest(`Invalid value for '${field}': expected a string or null.`)
  if (value.length > max) throw badRequest(`Invalid value for '${field}': longer than ${max} characters.`)
  return value
}

function oneOf(field: string, value: unknown, allowed: readonly string[], nullable: boolean): string | null {
  if (value === null && nullable) return null
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw badRequest(`Invalid value '${String(value)}' for '${field}': expected one of ${allowed.join(', ')}.`)
  }
  return value
}

function count(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 2 ** 31 - 1) {
    throw badRequest(`Invalid value for '${field}': expected a whole number from 0 to 2147483647.`)
  }
  return value
}

/** Validates the core attributes present in `input` and returns them typed. */
export function validateCore(input: Record<string, unknown>): CoreAttributes {
  const out: CoreAttributes = {}
  if ('name' in input) out.name = nullableString('name', input.name)
  if ('visibility' in input) out.visibility = oneOf('visibility', input.visibility, VISIBILITIES, false)!
  if ('disk_format' in input) out.disk_format = oneOf('disk_format', input.disk_format, DISK_FORMATS, true)
  if ('container_format' in input) out.container_format = oneOf('container_format', input.container_format, CONTAINER_FORMATS, true)
  for (const flag of ['protected', 'os_hidden'] as const) {
    if (flag in input) {
      if (typeof input[flag] !== 'boolean') throw badRequest(`Invalid value for '${flag}': expected true or false.`)
      out[flag] = input[flag] as boolean
    }
  }
  if ('min_disk' in input) out.min_disk = count('min_disk', input.min_disk)
  if ('min_ram' in input) out.min_ram = count('min_ram', input.min_ram)
  if ('tags' in input) {
    const tags = input.tags
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string' || t.length === 0 || t.length > 255)) {
      throw badRequest("Invalid value for 'tags': expected a list of strings of 1 to 255 characters.")
    }
    if (tags.length > 128) throw new AppError('over_limit', 'Maximum number of tags exceeded (128).')
    out.tags = [...new Set(tags as string[])]
  }
  return out
}

export function validateProperties(properties: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(properties)) {
    if (key.length === 0 || key.length > 255) throw badRequest(`Invalid property name '${key}': 1 to 255 characters.`)
    if (typeof value !== 'string') throw badRequest(`Invalid value for property '${key}': expected a string.`)
    if (value.length > 65535) throw badRequest(`Invalid value for property '${key}': longer than 65535 characters.`)
    out[key] = value
  }
  if (Object.keys(out).length > MAX_PROPERTIES) throw new AppError('over_limit', `Maximum number of image properties exceeded (${MAX_PROPERTIES}).`)
  return out
}
