/**
 * Glance's JSON-patch dialect (`application/openstack-images-v2.1-json-patch`): a list of add/replace/remove
 * operations on top-level paths (`/name`, `/tags`, `/<property>`). Applied to a draft of the image; the
 * service validates the draft as a whole before anything is written. The older media type
 * `application/openstack-images-v2.0-json-patch` writes each operation in JSON-patch draft 4's form
 * (`{"replace": "/name", "value": …}`), which Tempest still sends: `fromDraft4` turns it into the current form.
 */
import { AppError, badRequest, conflict } from '../../contracts/errors.js'
import { CORE_ATTRIBUTES, READ_ONLY_ATTRIBUTES } from './model.js'

export interface PatchOperation {
  op: string
  path: string
  value?: unknown
}

/** Everything a patch may change. */
export interface ImageDraft {
  core: Record<string, unknown>
  properties: Record<string, string>
}

const REMOVABLE_CORE = new Set<string>([])
const OPERATIONS = ['add', 'replace', 'remove']

/** Draft-4 operations (`{"<op>": "<path>", "value"?}`, exactly one operation member) in the current form. */
export function fromDraft4(operations: unknown): unknown {
  if (!Array.isArray(operations)) return operations
  return operations.map((raw) => {
    if (!raw || typeof raw !== 'object') return raw
    const ops = OPERATIONS.filter((op) => op in raw)
    if (ops.length !== 1) throw badRequest('Operation objects must contain exactly one member named "add", "remove", or "replace".')
    const { [ops[0]]: path, ...rest } = raw as Record<string, unknown>
    return { ...rest, op: ops[0], path }
  })
}

function attributeOf(path: string): string {
  if (typeof path !== 'string' || !path.startsWith('/') || path.length < 2) throw badRequest(`Invalid JSON pointer for this resource: '${path}'`)
  const parts = path.slice(1).split('/')
  if (parts.length !== 1) throw badRequest(`Invalid JSON pointer for this resource: '${path}'`)
  return parts[0].replace(/~1/g, '/').replace(/~0/g, '~')
}

/**
 * Applies the operations to the draft. `writable`: read-only attributes this caller may still replace (an admin
 * changes an image's `owner`, as in Glance); they are in the draft's core.
 */
export function applyPatch(draft: ImageDraft, operations: unknown, writable: ReadonlySet<string> = new Set()): void {
  if (!Array.isArray(operations)) throw badRequest('The request body must be a JSON array of patch operations.')
  for (const raw of operations) {
    if (!raw || typeof raw !== 'object') throw badRequest('Each patch operation must be a JSON object.')
    const op = raw as PatchOperation
    if (!OPERATIONS.includes(op.op)) throw badRequest(`Unsupported patch operation '${String(op.op)}': use add, replace or remove.`)
    const name = attributeOf(op.path)
    if (name === 'id' || (READ_ONLY_ATTRIBUTES.has(name) && !writable.has(name))) throw new AppError('forbidden', `Attribute '${name}' is read-only.`)
    if (op.op !== 'remove' && !('value' in op)) throw badRequest(`Operation '${op.op}' on '${op.path}' needs a value.`)
    if (CORE_ATTRIBUTES.has(name)) {
      if (op.op === 'remove') {
        if (!REMOVABLE_CORE.has(name)) throw new AppError('forbidden', `Attribute '${name}' can not be removed.`)
        delete draft.core[name]
      } else {
        draft.core[name] = op.value
      }
      continue
    }
    if (op.op === 'remove') {
      if (!(name in draft.properties)) throw conflict(`Property ${name} does not exist.`)
      delete draft.properties[name]
      continue
    }
    if (op.op === 'replace' && !(name in draft.properties)) throw conflict(`Property ${name} does not exist.`)
    if (typeof op.value !== 'string') throw badRequest(`Property '${name}' must be a string, got ${JSON.stringify(op.value)}.`)
    draft.properties[name] = op.value
  }
}
