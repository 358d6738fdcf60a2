/** Images: the project's and public images; upload from a file with a progress bar; delete. */
import { useState } from 'preact/hooks'
import { del, post, upload } from '../api/http'
import { listImages, type Image } from '../api/resources'
import { isAdmin, session } from '../api/session'
import { ActionButton, FormDialog, Status, formatBytes, formatTime, type FieldValue } from '../ui/components'
import { ResourceList } from '../ui/resource-list'

const DISK_FORMATS = ['qcow2', 'raw', 'iso', 'vmdk', 'vdi', 'vhd', 'vhdx', 'ami', 'aki', 'ari']

/** Guesses the disk format from the file name (what users pick anyway). */
export function diskFormatOf(name: string): string {
  const ext = name.toLowerCase().split('.').pop() ?? ''
  return DISK_FORMATS.includes(ext) ? ext : ext === 'img' ? 'raw' : 'qcow2'
}

function UploadDialog({ onClose, onDone }: { onClose: () => void; onDone: () => void }) {
  const [progress, setProgress] = useState<{ sent: number; total: number }>()
  const submit = async (v: Record<string, FieldValue>) => {
    const file = v.file as File | undefined
    if (!file) throw new Error('Choose the image file to upload.')
    const name = (v.name as string).trim() || file.name
    const image = await post<Image>('image', '/images', { name, disk_format: v.format || diskFormatOf(file.name), container_format: 'bare', visibility: v.visibility || 'private', min_disk: Number(v.minDisk) || 0 })
    setProgress({ sent: 0, total: file.size })
    try {
      await upload('image', `/images/${image.id}/file`, file, (sent, total) => setProgress({ sent, total }))
    } catch (err) {
      // An image record without data is of no use: remove it, as openstack image create --file does.
      await del('image', `/images/${image.id}`).catch(() => {})
      setProgress(undefined)
      throw err
    }
    onDone()
  }
  const percent = progress && progress.total ? Math.floor((progress.sent / progress.total) * 100) : 0
  return (
    <FormDialog
      title="Upload image"
      submitLabel="Upload"
      onClose={onClose}
      fields={[
        { name: 'file', label: 'Image file', type: 'file', required: true },
        { name: 'name', label: 'Name', help: 'Empty: the file name.' },
        { name: 'format', label: 'Disk format', type: 'select', options: DISK_FORMATS.map((f) => ({ value: f, label: f })), help: 'Empty: from the file name (.qcow2, .raw/.img, .iso…).' },
        { name: 'minDisk', label: 'Minimum disk (GiB)', type: 'number', min: 0, initial: '0' },
        {
          name: 'visibility',
          label: 'Visibility',
          type: 'select',
          required: true,
          options: [
            { value: 'private', label: 'Private (this project)' },
            { value: 'shared', label: 'Shared (projects you add as members)' },
            { value: 'community', label: 'Community (everyone, not listed by default)' },
            ...(isAdmin() ? [{ value: 'public', label: 'Public (everyone)' }] : []),
          ],
        },
      ]}
      submit={submit}
    >
      {progress && (
        <div class="field">
          <label for="upload-progress">
            Uploading: {formatBytes(progress.sent)} of {formatBytes(progress.total)} ({percent}%)
          </label>
          <progress id="upload-progress" max={progress.total || 1} value={progress.sent} aria-valuetext={`${percent}%`} />
        </div>
      )}
    </FormDialog>
  )
}

export function ImagesPage() {
  const [uploading, setUploading] = useState(false)
  const project = session()!.project.id
  return (
    <ResourceList<Image>
      title="Images"
      load={listImages}
      rowKey={(i) => i.id}
      empty="No images. Upload one with “Upload image”."
      busy={(i) => i.status === 'queued' || i.status === 'saving'}
      tools={(reload) => (
        <>
          <button type="button" class="primary" onClick={() => setUploading(true)}>
            Upload image
          </button>
          {uploading && <UploadDialog onClose={() => setUploading(false)} onDone={reload} />}
        </>
      )}
      columns={[
        { label: 'Name', value: (i) => i.name || i.id },
        { label: 'Status', value: (i) => <Status value={i.status} /> },
        { label: 'Visibility', value: (i) => i.visibility },
        { label: 'Format', value: (i) => i.disk_format ?? '' },
        { label: 'Size', value: (i) => formatBytes(i.size) },
        { label: 'Owner', value: (i) => (i.owner === project ? 'this project' : i.owner) },
        { label: 'Created', value: (i) => formatTime(i.created_at) },
      ]}
      actions={(i, reload) => (i.owner === project || isAdmin() ? <ActionButton label="Delete" danger confirm={`Delete image ${i.name}?`} run={() => del('image', `/images/${i.id}`)} onDone={reload} /> : null)}
    />
  )
}
