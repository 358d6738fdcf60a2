/**
 * Glance's JSON Schema documents of metadata definitions (/v2/schemas/metadefs/…): clients read their `name`
 * and `properties`. Shortened to the fields pcc serves.
 */
const str = { type: 'string' }
const time = { type: 'string', format: 'date-time' }
const property = {
  type: 'object',
  properties: {
    name: str, title: str, description: str, type: { type: 'string', enum: ['array', 'boolean', 'integer', 'number', 'object', 'string'] },
    enum: { type: 'array' }, default: {}, readonly: { type: 'boolean' }, minimum: { type: 'number' }, maximum: { type: 'number' },
    minLength: { type: 'integer' }, maxLength: { type: 'integer' }, pattern: str, items: { type: 'object' },
  },
  required: ['title', 'type'],
}
const object = { type: 'object', properties: { name: str, description: str, required: { type: 'array', items: str }, properties: { type: 'object', additionalProperties: property }, created_at: time, updated_at: time, schema: str, self: str }, required: ['name'] }
const tag = { type: 'object', properties: { name: str, created_at: time, updated_at: time }, required: ['name'] }
const association = { type: 'object', properties: { name: str, prefix: str, properties_target: str, created_at: time, updated_at: time }, required: ['name'] }
const namespace = {
  type: 'object',
  properties: {
    namespace: str, display_name: str, description: str, visibility: { type: 'string', enum: ['public', 'private'] }, protected: { type: 'boolean' }, owner: str,
    created_at: time, updated_at: time, schema: str, self: str, resource_type_associations: { type: 'array', items: association },
    properties: { type: 'object', additionalProperties: property }, objects: { type: 'array', items: object }, tags: { type: 'array', items: tag },
  },
  required: ['namespace'],
}
const links = [{ rel: 'first', href: '{first}' }, { rel: 'next', href: '{next}' }, { rel: 'describedby', href: '{schema}' }]
const many = (name: string, key: string, item: Record<string, unknown>) => ({ name, type: 'object', properties: { [key]: { type: 'array', items: item }, first: str, next: str, schema: str }, links })

export const METADEF_SCHEMAS: Record<string, Record<string, unknown>> = {
  namespace: { name: 'namespace', ...namespace },
  namespaces: many('namespaces', 'namespaces', namespace),
  resource_type: { name: 'resource_type_association', ...association },
  resource_types: many('resource_type_associations', 'resource_type_associations', association),
  object: { name: 'object', ...object },
  objects: many('objects', 'objects', object),
  property: { name: 'property', ...property },
  properties: { name: 'properties', type: 'object', properties: { properties: { type: 'object', additionalProperties: property }, schema: str }, links },
  tag: { name: 'tag', ...tag },
  tags: many('tags', 'tags', tag),
}
