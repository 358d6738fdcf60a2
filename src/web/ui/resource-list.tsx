/**
 * A list page of one resource kind: the table, a create dialog from a field table, per-row actions, and a
 * refresh every few seconds while any row is in a transient state (creating, attaching, saving…).
 */
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { ErrorNotice, FormDialog, Loading, Table, type Column, type Field, type FieldValue } from './components'
import { useAsync, usePoll } from './hooks'

export interface CreateSpec {
  label: string
  fields: () => Promise<Field[]> | Field[]
  submit: (values: Record<string, FieldValue>) => Promise<unknown>
  wide?: boolean
}

export interface ListSpec<T> {
  title: string
  caption?: string
  load: (signal: AbortSignal) => Promise<T[]>
  columns: Column<T>[]
  rowKey: (row: T) => string
  empty: string
  create?: CreateSpec
  /** Row buttons; `reload` refreshes the list after a change. */
  actions?: (row: T, reload: () => void) => ComponentChildren
  /** Rows in this state make the list refresh itself every 2 s. */
  busy?: (row: T) => boolean
  /** Refresh this often anyway (state that changes by itself, like hosts). */
  refreshMs?: number
  /** Extra toolbar content (more create buttons…). */
  tools?: (reload: () => void) => ComponentChildren
  heading?: 'h1' | 'h2'
  /** Reload when this changes (a change made in another list of the page that shows here too). */
  reloadWith?: unknown
}

export function CreateButton({ spec, onDone }: { spec: CreateSpec; onDone: () => void }) {
  const [open, setOpen] = useState(false)
  return (
    <>
      <button type="button" class="primary" onClick={() => setOpen(true)}>
        {spec.label}
      </button>
      {open && <CreateDialog spec={spec} onClose={() => setOpen(false)} onDone={onDone} />}
    </>
  )
}

function CreateDialog({ spec, onClose, onDone }: { spec: CreateSpec; onClose: () => void; onDone: () => void }) {
  const [fields, setFields] = useState<Field[]>()
  const [error, setError] = useState<unknown>()
  useEffect(() => void Promise.resolve(spec.fields()).then(setFields, setError), [])
  if (!fields) return error ? <ErrorNotice error={error} title="Could not load the form" /> : null
  return (
    <FormDialog
      title={spec.label}
      fields={fields}
      wide={spec.wide}
      submitLabel={spec.label.replace(/…$/, '')}
      onClose={onClose}
      submit={async (values) => {
        await spec.submit(values)
        onDone()
      }}
    />
  )
}

export function ResourceList<T>(spec: ListSpec<T>) {
  const list = useAsync(spec.load, [spec.reloadWith])
  usePoll(async () => list.reload(), list.data?.some((row) => spec.busy?.(row)) ? 2000 : spec.refreshMs)
  const Heading = spec.heading ?? 'h1'
  return (
    <section>
      <div class="page-head">
        <Heading>{spec.title}</Heading>
        {spec.tools?.(list.reload)}
        {spec.create && <CreateButton spec={spec.create} onDone={list.reload} />}
      </div>
      <ErrorNotice error={list.error} title={`Could not load ${spec.title.toLowerCase()}`} />
      {!list.data && list.loading && <Loading />}
      {list.data && <Table<T> caption={spec.caption} columns={spec.columns} rows={list.data} rowKey={spec.rowKey} empty={spec.empty} actions={spec.actions && ((row) => spec.actions!(row, list.reload))} />}
    </section>
  )
}

/** A row button that opens a small form (fields may be loaded when it opens). */
export function FormAction({ label, fields, submit, onDone }: { label: string; fields: () => Promise<Field[]> | Field[]; submit: (v: Record<string, FieldValue>) => Promise<unknown>; onDone: () => void }) {
  const [open, setOpen] = useState<Field[]>()
  return (
    <>
      <button type="button" onClick={async () => setOpen(await fields())}>
        {label}…
      </button>
      {open && (
        <FormDialog
          title={label}
          fields={open}
          submitLabel={label}
          onClose={() => setOpen(undefined)}
          submit={async (v) => {
            await submit(v)
            onDone()
          }}
        />
      )}
    </>
  )
}
