/** The building blocks of every page: notices, tables, tabs, dialogs and forms described by field tables. */
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../api/http'

export function ErrorNotice({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null
  const e = error instanceof ApiError ? error : new ApiError(0, (error as Error).message ?? String(error))
  return (
    <div class="notice error" role="alert">
      <strong>{title ?? 'That did not work'}: </strong>
      {e.message}
      <div class="advice">{error instanceof ApiError ? e.advice : 'Try again.'}</div>
      {e.requestId && <div class="request-id">Request id: {e.requestId}</div>}
    </div>
  )
}

export function Loading({ what }: { what?: string }) {
  return (
    <p class="loading" role="status">
      Loading{what ? ` ${what}` : ''}…
    </p>
  )
}

export interface Column<T> {
  label: string
  value: (row: T) => ComponentChildren
  class?: string
}

export function Table<T>({ columns, rows, rowKey, empty, caption, actions }: { columns: Column<T>[]; rows: T[]; rowKey: (row: T) => string; empty: string; caption?: string; actions?: (row: T) => ComponentChildren }) {
  return (
    <table class="table">
      {caption && <caption>{caption}</caption>}
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" class={c.class}>
              {c.label}
            </th>
          ))}
          {actions && <th scope="col" class="actions-col">Actions</th>}
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 && (
          <tr>
            <td colSpan={columns.length + (actions ? 1 : 0)} class="empty">
              {empty}
            </td>
          </tr>
        )}
        {rows.map((row) => (
          <tr key={rowKey(row)} data-key={rowKey(row)}>
            {columns.map((c) => (
              <td class={c.class}>{c.value(row)}</td>
            ))}
            {actions && <td class="actions-col">{actions(row)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function Tabs({ tabs, current, onSelect }: { tabs: { id: string; label: string }[]; current: string; onSelect: (id: string) => void }) {
  const onKey = (event: KeyboardEvent, index: number) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0
    if (!step) return
    const next = tabs[(index + step + tabs.length) % tabs.length]
    onSelect(next.id)
    ;(event.currentTarget as HTMLElement).parentElement?.querySelector<HTMLElement>(`[data-tab="${next.id}"]`)?.focus()
  }
  return (
    <div class="tabs" role="tablist">
      {tabs.map((tab, i) => (
        <button role="tab" type="button" data-tab={tab.id} aria-selected={tab.id === current} tabIndex={tab.id === current ? 0 : -1} onClick={() => onSelect(tab.id)} onKeyDown={(e) => onKey(e, i)}>
          {tab.label}
        </button>
      ))}
    </div>
  )
}

/** A modal dialog (the native <dialog>: focus is trapped and Escape closes it, in Chromium and Firefox). */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current!
    if (!dialog.open) dialog.showModal()
    return () => dialog.close()
  }, [])
  return (
    <dialog ref={ref} class={wide ? 'wide' : ''} aria-label={title} onCancel={(e) => (e.preventDefault(), onClose())}>
      <header>
        <h2>{title}</h2>
        <button type="button" class="icon" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  )
}

export type FieldValue = string | string[] | boolean | File | undefined
export interface Field {
  name: string
  label: string
  type?: 'text' | 'password' | 'number' | 'select' | 'textarea' | 'checkboxes' | 'checkbox' | 'file' | 'radio'
  options?: { value: string; label: string }[]
  required?: boolean
  help?: string
  placeholder?: string
  initial?: FieldValue
  /** Shown only when this returns true for the current values. */
  when?: (values: Record<string, FieldValue>) => boolean
  min?: number
  autocomplete?: string
  /** Focused when the form appears (a form that replaces another, like the TOTP step). */
  autofocus?: boolean
}

function FieldInput({ field, value, onChange }: { field: Field; value: FieldValue; onChange: (v: FieldValue) => void }) {
  const id = `f-${field.name}`
  const common = { id, name: field.name, required: field.required, 'aria-describedby': field.help ? `${id}-help` : undefined }
  switch (field.type) {
    case 'select':
      return (
        <select {...common} value={value as string} onChange={(e) => onChange(e.currentTarget.value)}>
          {!field.required && <option value="">—</option>}
          {field.options?.map((o) => (
            <option value={o.value}>{o.label}</option>
          ))}
        </select>
      )
    case 'textarea':
      return <textarea {...common} rows={6} placeholder={field.placeholder} value={value as string} onInput={(e) => onChange(e.currentTarget.value)} />
    case 'checkbox':
      return <input {...common} type="checkbox" checked={Boolean(value)} onChange={(e) => onChange(e.currentTarget.checked)} />
    case 'file':
      return <input {...common} type="file" onChange={(e) => onChange(e.currentTarget.files?.[0])} />
    case 'checkboxes':
    case 'radio': {
      const selected = new Set(field.type === 'radio' ? [value as string] : ((value as string[]) ?? []))
      return (
        <div class="choices" role="group" aria-labelledby={`${id}-label`}>
          {field.options?.length === 0 && <span class="muted">None available</span>}
          {field.options?.map((o) => (
            <label class="choice">
              <input
                type={field.type === 'radio' ? 'radio' : 'checkbox'}
                name={field.name}
                value={o.value}
                checked={selected.has(o.value)}
                onChange={(e) => {
                  if (field.type === 'radio') return onChange(o.value)
                  const next = new Set(selected)
                  if (e.currentTarget.checked) next.add(o.value)
                  else next.delete(o.value)
                  onChange([...next])
                }}
              />
              {o.label}
            </label>
          ))}
        </div>
      )
    }
    default:
      return (
        <input
          {...common}
          type={(field.type ?? 'text') as 'text'}
          min={field.min}
          placeholder={field.placeholder}
          autoComplete={field.autocomplete}
          value={value as string}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      )
  }
}

export function initialValues(fields: Field[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.map((f) => [f.name, f.initial ?? (f.type === 'checkboxes' ? [] : f.type === 'checkbox' ? false : f.type === 'select' && f.required ? f.options?.[0]?.value ?? '' : '')]))
}

/** A form from a field table; `submit` gets the values, its error is shown with what to do next. */
export function Form({ fields, submit, submitLabel, onCancel, children }: { fields: Field[]; submit: (values: Record<string, FieldValue>) => Promise<void>; submitLabel: string; onCancel?: () => void; children?: ComponentChildren }) {
  const [values, setValues] = useState(() => initialValues(fields))
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const form = useRef<HTMLFormElement>(null)
  useEffect(() => {
    const first = fields.find((f) => f.autofocus)
    if (first) form.current?.querySelector<HTMLElement>(`#f-${first.name}`)?.focus()
  }, [])
  const onSubmit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await submit(values)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form ref={form} onSubmit={onSubmit} class="form">
      {fields
        .filter((f) => !f.when || f.when(values))
        .map((f) => (
          <div class={`field ${f.type === 'checkbox' ? 'inline' : ''}`}>
            <label for={`f-${f.name}`} id={`f-${f.name}-label`}>
              {f.label}
              {f.required && <span aria-hidden="true"> *</span>}
            </label>
            <FieldInput field={f} value={values[f.name]} onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))} />
            {f.help && (
              <small id={`f-${f.name}-help`} class="help">
                {f.help}
              </small>
            )}
          </div>
        ))}
      {children}
      <ErrorNotice error={error} />
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Working…' : submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  )
}

/** A dialog holding a form; closes itself when the submit succeeds. */
export function FormDialog(props: { title: string; fields: Field[]; submitLabel: string; submit: (values: Record<string, FieldValue>) => Promise<void>; onClose: () => void; children?: ComponentChildren; wide?: boolean }) {
  return (
    <Dialog title={props.title} onClose={props.onClose} wide={props.wide}>
      <Form
        fields={props.fields}
        submitLabel={props.submitLabel}
        onCancel={props.onClose}
        submit={async (values) => {
          await props.submit(values)
          props.onClose()
        }}
      >
        {props.children}
      </Form>
    </Dialog>
  )
}

/** A button that runs an API call, shows "Working…" meanwhile and reports its failure. */
export function ActionButton({ label, run, confirm, danger, onDone }: { label: string; run: () => Promise<unknown>; confirm?: string; danger?: boolean; onDone?: () => void }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>()
  const click = async () => {
    if (confirm && !window.confirm(confirm)) return
    setBusy(true)
    setError(undefined)
    try {
      await run()
      onDone?.()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <button type="button" class={danger ? 'danger' : ''} disabled={busy} onClick={click}>
        {busy ? 'Working…' : label}
      </button>
      {error !== undefined && (
        <Dialog title={`${label} failed`} onClose={() => setError(undefined)}>
          <ErrorNotice error={error} title={`${label} failed`} />
        </Dialog>
      )}
    </>
  )
}

/** A status as a coloured badge (the colour follows the kind of state, the text says it). */
export function Status({ value }: { value: string | undefined | null }) {
  const v = (value ?? '').toUpperCase()
  const kind = /ERROR|FAIL|KILLED|DOWN|CRASH|NOT AVAILABLE/.test(v) ? 'bad' : /ACTIVE|AVAILABLE|IN-USE|OK|UP|ENABLED|COMPLETED|CONFIRMED|^TRUE$/.test(v) ? 'good' : /SHUTOFF|STOPPED|SHELVED|PAUSED|SUSPENDED|DEACTIVATED|DISABLED/.test(v) ? 'idle' : 'busy'
  return <span class={`status ${kind}`}>{value ?? '—'}</span>
}

/** Used against limit as a ring; no limit (-1) draws an empty ring and says "no limit". */
/** A usage ring; `note` is a line under the figures (what the limit is made of). */
export function Donut({ label, used, limit, unit, note }: { label: string; used: number; limit: number; unit?: string; note?: string }) {
  const unlimited = limit < 0
  const ratio = unlimited || limit === 0 ? (used > 0 && limit === 0 ? 1 : 0) : Math.min(1, used / limit)
  const r = 40
  const c = 2 * Math.PI * r
  const kind = ratio >= 0.9 ? 'bad' : ratio >= 0.7 ? 'warn' : 'good'
  const text = `${fmt(used)}${unit ?? ''} of ${unlimited ? 'no limit' : `${fmt(limit)}${unit ?? ''}`}`
  return (
    <figure class="donut" role="img" aria-label={`${label}: ${text}`}>
      <svg viewBox="0 0 100 100" width="110" height="110" aria-hidden="true">
        <circle cx="50" cy="50" r={r} class="track" />
        <circle cx="50" cy="50" r={r} class={`value ${kind}`} stroke-dasharray={`${ratio * c} ${c}`} transform="rotate(-90 50 50)" />
        <text x="50" y="55" text-anchor="middle">
          {unlimited ? '∞' : `${Math.round(ratio * 100)}%`}
        </text>
      </svg>
      <figcaption>
        <strong>{label}</strong>
        <span>{text}</span>
        {note && <small class="muted">{note}</small>}
      </figcaption>
    </figure>
  )
}

function fmt(n: number): string {
  return n.toLocaleString('en')
}

/** Text to copy (a command line): selectable, with a Copy button. */
export function CopyBlock({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <div class="copy">
      <pre aria-label={label} tabIndex={0}>
        {text}
      </pre>
      <button
        type="button"
        onClick={async () => {
          await navigator.clipboard?.writeText(text).catch(() => {})
          setCopied(true)
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  )
}

/** Saves text as a file in the browser's downloads. */
export function download(name: string, text: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let i = 0
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024
    i++
  }
  return `${value.toFixed(i === 0 ? 0 : 1)} ${units[i]}`
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`)
  return isNaN(d.getTime()) ? iso : d.toLocaleString()
}
