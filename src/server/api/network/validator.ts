/**
 * The network API's body validator. Neutron converts some attributes before checking them: integers may come
 * as decimal strings (openstackclient sends `"mtu": "1450"`), booleans as 'true'/'False'/'1'/0. Everything
 * else is strict: a number where a string is expected is a 400, as in Neutron. Two keywords carry the
 * conversions, `neutronInt` ({ min?, max?, nullable? }) and `neutronBool` ({ nullable? }); they rewrite the
 * value in place, so handlers see real integers and booleans.
 */
import { Ajv } from 'ajv'

/** The part of Ajv's data context a modifying keyword needs. */
interface DataValidationCxt {
  parentData?: unknown
  parentDataProperty?: string | number
}

interface IntSpec {
  min?: number
  max?: number
  nullable?: boolean
}

function setValue(cxt: DataValidationCxt | undefined, value: unknown): void {
  if (cxt && cxt.parentData !== undefined && cxt.parentDataProperty !== undefined) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = value
}

type Fail = { (message: string): false }

function failer(fn: { errors?: unknown }, keyword: string): Fail {
  return (message: string) => {
    fn.errors = [{ keyword, message, params: {} }]
    return false
  }
}

export function networkBodyAjv(): Ajv {
  const ajv = new Ajv({ allErrors: false, coerceTypes: false, useDefaults: false, removeAdditional: false, strict: false })
  const intValidate = function validate(spec: IntSpec, data: unknown, _parent?: unknown, cxt?: DataValidationCxt): boolean {
    const fail = failer(validate as { errors?: unknown }, 'neutronInt')
    if (data === null) return spec.nullable === true || fail('must be an integer')
    let n: number
    if (typeof data === 'number' && Number.isInteger(data)) n = data
    else if (typeof data === 'string' && /^-?\d{1,15}$/.test(data.trim())) n = Number(data.trim())
    else return fail('must be an integer')
    if (spec.min !== undefined && n < spec.min) return fail(`must be >= ${spec.min}`)
    if (spec.max !== undefined && n > spec.max) return fail(`must be <= ${spec.max}`)
    setValue(cxt, n)
    return true
  }
  ajv.addKeyword({ keyword: 'neutronInt', modifying: true, errors: true, validate: intValidate })
  const boolValidate = function validate(spec: { nullable?: boolean }, data: unknown, _parent?: unknown, cxt?: DataValidationCxt): boolean {
    const fail = failer(validate as { errors?: unknown }, 'neutronBool')
    if (data === null) return spec.nullable === true || fail('must be a boolean')
    let b: boolean
    if (typeof data === 'boolean') b = data
    else if (data === 0 || data === 1) b = data === 1
    else if (typeof data === 'string' && ['true', '1', 'false', '0'].includes(data.toLowerCase())) b = ['true', '1'].includes(data.toLowerCase())
    else return fail(`'${String(data)}' is not a valid boolean value`)
    setValue(cxt, b)
    return true
  }
  ajv.addKeyword({ keyword: 'neutronBool', modifying: true, errors: true, validate: boolValidate })
  return ajv
}

const INTEGER_TEXT = '^\\s*-?\\d{1,15}\\s*$'
const BOOLEAN_TEXT = '^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$'

/** The standard JSON Schema each conversion keyword accepts, for the OpenAPI document. */
const DOCUMENTED_KEYWORDS: Record<string, (spec: IntSpec & { nullable?: boolean }) => Record<string, unknown>> = {
  neutronInt: (spec) => ({
    anyOf: [
      { type: 'integer', ...(spec.min !== undefined && { minimum: spec.min }), ...(spec.max !== undefined && { maximum: spec.max }) },
      { type: 'string', pattern: INTEGER_TEXT, description: 'an integer in decimal' },
      ...(spec.nullable ? [{ type: 'null' }] : []),
    ],
  }),
  neutronBool: (spec) => ({ anyOf: [{ type: 'boolean' }, { enum: [0, 1] }, { type: 'string', pattern: BOOLEAN_TEXT }, ...(spec.nullable ? [{ type: 'null' }] : [])] }),
}

/** `schema` with the conversion keywords written as the standard JSON Schema they accept. */
export function documentedForm(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(documentedForm)
  if (schema === null || typeof schema !== 'object') return schema
  const entries = Object.entries(schema as Record<string, unknown>)
  const keyword = entries.find(([key]) => key in DOCUMENTED_KEYWORDS)
  if (keyword) return DOCUMENTED_KEYWORDS[keyword[0]](keyword[1] as IntSpec)
  return Object.fromEntries(entries.map(([key, value]) => [key, documentedForm(value)]))
}
