/** Value schemas the compute field tables and answer schemas share (TypeBox, i.e. JSON Schema). */
import { Type as T } from '@sinclair/typebox'

const link = T.Object({ rel: T.String(), href: T.String(), type: T.Optional(T.String()) })

export const J = {
  str: T.String(),
  /** A string or null. */
  nstr: T.Union([T.String(), T.Null()]),
  int: T.Integer(),
  num: T.Number(),
  bool: T.Boolean(),
  /** Metadata, extra specs: string → string. */
  strMap: T.Record(T.String(), T.String()),
  links: T.Array(link),
}
