/** Reading /openapi.json in tests: its shape (the parts tests use) and its operations as a flat list. */

export type JsonSchema = Record<string, unknown>

export interface OpenApiParameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required?: boolean
  schema?: JsonSchema
  description?: string
}

export interface OpenApiMedia {
  schema?: JsonSchema
}

export interface OpenApiResponse {
  description?: string
  content?: Record<string, OpenApiMedia>
}

export interface OpenApiOperation {
  summary?: string
  tags?: string[]
  parameters?: OpenApiParameter[]
  requestBody?: { required?: boolean; content: Record<string, OpenApiMedia> }
  responses?: Record<string, OpenApiResponse>
  /** `[]`: open to anyone; absent: the document's default (a token). */
  security?: Record<string, string[]>[]
}

export interface OpenApiDocument {
  openapi: string
  info: { title: string; version: string }
  servers: { url: string }[]
  paths: Record<string, Record<string, OpenApiOperation>>
  components?: { schemas?: Record<string, JsonSchema> }
}

export interface Operation {
  /** Upper case: GET, POST… */
  method: string
  /** As the document writes it: /compute/v2.1/servers/{id} */
  path: string
  operation: OpenApiOperation
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

export function openApiOperations(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  )
}
