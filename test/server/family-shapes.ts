/**
 * Each API family's error body, as its clients parse it, with a path of the family that takes a JSON body (for
 * the body-handling tests: limit, malformed JSON, bodiless requests). Shared by ops.test.ts and bodiless-json.test.ts.
 */
import assert from 'node:assert/strict'

export interface FamilyShape {
  family: string
  /** A POST route of the family that reads a JSON body. */
  path: string
  check: (body: Record<string, unknown>, status: number) => void
}

/** Nova's and Cinder's fault: one key naming the fault, holding code and message. */
function fault(body: Record<string, unknown>, status: number): void {
  const [name, ...rest] = Object.keys(body)
  assert.deepEqual(rest, [])
  assert.equal(name, status === 413 ? 'requestEntityTooLarge' : 'badRequest')
  const inner = body[name] as { code: number; message: string }
  assert.equal(inner.code, status)
  assert.equal(typeof inner.message, 'string')
}

/** Keystone's error, also the shape of pcc's own services (resmgr). */
function keystoneError(body: Record<string, unknown>, status: number): void {
  const error = body.error as { code: number; title: string; message: string }
  assert.equal(error.code, status)
  assert.equal(error.title, status === 413 ? 'Request Entity Too Large' : 'Bad Request')
  assert.equal(typeof error.message, 'string')
}

export const FAMILY_SHAPES: FamilyShape[] = [
  { family: 'compute', path: '/compute/v2.1/servers', check: fault },
  { family: 'identity', path: '/identity/v3/auth/tokens', check: keystoneError },
  {
    family: 'network',
    path: '/network/v2.0/networks',
    check: (body) => {
      const error = body.NeutronError as { type: string; message: string; detail: string }
      assert.equal(typeof error.type, 'string')
      assert.equal(typeof error.message, 'string')
    },
  },
  {
    family: 'image',
    path: '/image/v2/images',
    check: (body, status) => {
      assert.match(String(body.code), new RegExp(`^${status} `))
      assert.equal(typeof body.message, 'string')
    },
  },
  { family: 'volume', path: '/volume/v3/volumes', check: fault },
  { family: 'resmgr', path: '/resmgr/v1/registration-tokens', check: keystoneError },
  {
    family: 'idp',
    path: '/idp/token',
    check: (body) => {
      assert.equal(body.error, 'invalid_request')
      assert.equal(typeof body.error_description, 'string')
    },
  },
]

export function familyShape(family: string): FamilyShape {
  const shape = FAMILY_SHAPES.find((s) => s.family === family)
  if (!shape) throw new Error(`no error shape for ${family}`)
  return shape
}
