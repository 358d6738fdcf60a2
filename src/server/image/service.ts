/**
 * The image service: Glance's rules for image records, their bytes (in a BlobStore), tags and members. Routes
 * call it with the caller's principal; compute calls `getVisibleImage`, `createSnapshotImage` and
 * `completeSnapshotImage` directly.
 *
 * Visibility (who sees an image): admins see everything; others see public and community images, their own
 * project's images, and shared images whose member list holds their project. An image one cannot see is 404.
 * Listing without a visibility filter shows public, own, and shared images whose membership was accepted;
 * community images are listed only when asked for (`visibility=community`) or owned, as in Glance.
 */
import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { AppError, badRequest, conflict, notFound } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'
import { BlobTooLargeError, type BlobDigests, type BlobStore, type PutOptions, type RbdSnapshotRef } from '../blobs/blob-store.js'
import { allows, authorize, visibilityOf, type Visibility } from '../policy/rules.js'
import { imagePolicy } from '../policy/image.policy.js'
import type { Db, Store } from '../storage/store.js'
import { prepared } from '../storage/prepared.js'
import { filterSortPage, type ImageQuery, type ListPage } from './listing.js'
import { CORE_ATTRIBUTES, MEMBER_STATUSES, READ_ONLY_ATTRIBUTES, rowToImage, type ImageMember, type ImageRecord } from './model.js'
import { applyPatch, type ImageDraft } from './patch.js'
import { validateCore, validateProperties } from './validate.js'
import type { Stamp } from '../http/view-cache.js'
import { lockRowFirst } from '../storage/row-locks.js'

/** How often a running upload refreshes its image's updated_at. */
export const UPLOAD_HEARTBEAT_MS = 15_000

export interface ImageServiceOptions {
  /** Largest image accepted by an upload, in bytes. */
  maxImageBytes: number
  now?: () => number
}

/** The caller as far as visibility is concerned, with the image policy's decisions about it (evaluated in viewerOf). */
export interface Viewer {
  projectId: string | undefined
  /** Whose images (and image members) the caller sees beyond the visibility rules (images:all_projects). */
  visibility: Visibility
  /** May name an image's owner (set_owner). */
  setsOwner: boolean
}

export function viewerOf(principal: Principal): Viewer {
  return {
    projectId: principal.scope.type === 'project' ? principal.scope.projectId : undefined,
    visibility: visibilityOf(allows(imagePolicy, 'images:all_projects', principal)),
    setsOwner: allows(imagePolicy, 'set_owner', principal),
  }
}

export interface SnapshotImageRequest {
  projectId: string
  name: string
  /** Free-form properties (Nova copies the server's image properties and adds instance_uuid, image_type…). */
  properties?: Record<string, string>
  diskFormat?: string
  containerFormat?: string
  minDisk?: number
  minRam?: number
  visibility?: 'private' | 'shared'
  /** The `image_type` property (default `snapshot`, as Nova sets it); null for none (an image uploaded from a volume). */
  imageType?: string | null
}

/** Read-only attributes a caller with set_owner may still change with a patch (Glance lets admins move an image to another owner). */
const ADMIN_WRITABLE: ReadonlySet<string> = new Set(['owner'])

// Compiled once: every show of an image reads both (storage/prepared.ts).
const imageById = prepared((db: Db, id: string) => db.selectFrom('images').selectAll().where('id', '=', id))
const imageStamp = prepared((db: Db, id: string) =>
  db
    .selectFrom('images')
    .select(['id', 'owner', 'visibility', 'rev'])
    .select((eb) => eb.fn.coalesce(eb.selectFrom('view_revisions').select('rev').where('kind', '=', 'image').whereRef('view_revisions.id', '=', 'images.id'), eb.lit(0)).as('view_rev'))
    .where('images.id', '=', id),
  { keepWhileUnchanged: true },
)
const tagsOfImage = prepared((db: Db, id: string) => db.selectFrom('image_tags').select('tag').where('image_id', '=', id))

export class ImageService {
  private readonly now: () => number

  constructor(
    private readonly store: Store,
    private readonly blobs: BlobStore,
    readonly options: ImageServiceOptions,
  ) {
    this.now = options.now ?? Date.now
  }

  // ---- reading ----

  private async load(db: Db, id: string): Promise<ImageRecord | undefined> {
    const [row] = await imageById(db, id)
    if (!row) return undefined
    const tags = await tagsOfImage(db, id)
    return rowToImage(row, tags.map((t) => t.tag))
  }

  /**
   * Locks the image's row before a transaction changes its tags and its row: the row first, its view_revisions
   * row after, in every writer (storage/row-locks.ts, migration 0128).
   */
  private lockFirst(tx: Db, id: string): Promise<void> {
    return lockRowFirst(tx, this.store.capabilities, 'images', id)
  }

  private async canSee(db: Db, viewer: Viewer, image: Pick<ImageRecord, 'id' | 'owner' | 'visibility'>): Promise<boolean> {
    if (viewer.visibility === 'all_projects' || image.visibility === 'public' || image.visibility === 'community') return true
    if (!viewer.projectId) return false
    if (image.owner === viewer.projectId) return true
    if (image.visibility !== 'shared') return false
    const member = await db.selectFrom('image_members').select('status').where('image_id', '=', image.id).where('member_id', '=', viewer.projectId).executeTakeFirst()
    return member !== undefined
  }

  /** The image if `viewer` may see it, else 404. */
  async find(viewer: Viewer, id: string, db: Db = this.store.db): Promise<ImageRecord> {
    const image = await this.load(db, id)
    if (!image || !(await this.canSee(db, viewer, image))) throw notFound(`No image found with ID ${id}`)
    return image
  }

  async get(principal: Principal, id: string): Promise<ImageRecord> {
    authorize(imagePolicy, 'get_image', principal)
    return this.find(viewerOf(principal), id)
  }

  /**
   * The stamp show's kept view is stamped with (migration 0128: the row's `rev`, raised on any change of the row,
   * and its view revision, raised on any change of its tags), after the checks `get` makes on the same statement's
   * row: `get_image`, then 404 for an image the caller may not see.
   */
  async viewStamp(principal: Principal, id: string): Promise<Stamp> {
    authorize(imagePolicy, 'get_image', principal)
    const db = this.store.db
    const [row] = await imageStamp(db, id)
    if (!row || !(await this.canSee(db, viewerOf(principal), { ...row, visibility: row.visibility as ImageRecord['visibility'] }))) throw notFound(`No image found with ID ${id}`)
    return { rev: row.rev, viewRev: row.view_rev }
  }

  /** Of these image ids, the ones that exist (the view cache's sweep). */
  async existing(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set()
    return new Set((await this.store.db.selectFrom('images').select('id').where('id', 'in', ids).execute()).map((r) => r.id))
  }

  async list(principal: Principal, query: ImageQuery): Promise<ListPage> {
    authorize(imagePolicy, 'get_images', principal)
    const viewer = viewerOf(principal)
    const db = this.store.db
    const visibility = typeof query.visibility === 'string' ? query.visibility : undefined
    if (visibility !== undefined && !['public', 'private', 'shared', 'community', 'all'].includes(visibility)) {
      throw badRequest(`Invalid visibility value: ${visibility}`)
    }
    const memberStatus = typeof query.member_status === 'string' ? query.member_status : 'accepted'
    if (![...MEMBER_STATUSES, 'all'].includes(memberStatus)) throw badRequest(`Invalid member_status value: ${memberStatus}`)

    let q = db.selectFrom('images').selectAll()
    if (visibility && visibility !== 'all') q = q.where('visibility', '=', visibility)
    const project = viewer.projectId ?? ''
    const sharedWithMe = db
      .selectFrom('image_members')
      .select('image_id')
      .where('member_id', '=', project)
      .$if(memberStatus !== 'all', (s) => s.where('status', '=', memberStatus))
    if (viewer.visibility !== 'all_projects') {
      q = q.where((eb) => {
        const ors = [eb('visibility', '=', 'public'), eb('owner', '=', project), eb.and([eb('visibility', '=', 'shared'), eb('id', 'in', sharedWithMe)])]
        if (visibility === 'community' || visibility === 'all') ors.push(eb('visibility', '=', 'community'))
        return eb.or(ors)
      })
    } else if (visibility === 'shared' && memberStatus !== 'all' && query.member_status !== undefined) {
      q = q.where('id', 'in', sharedWithMe)
    }
    // Hidden images are listed only when asked for.
    if (query.os_hidden === undefined) q = q.where('os_hidden', '=', 0)
    const rows = await q.execute()
    const tagRows = rows.length ? await db.selectFrom('image_tags').select(['image_id', 'tag']).where('image_id', 'in', rows.map((r) => r.id)).execute() : []
    const tagsOf = new Map<string, string[]>()
    for (const t of tagRows) tagsOf.set(t.image_id, [...(tagsOf.get(t.image_id) ?? []), t.tag])
    return filterSortPage(
      rows.map((r) => rowToImage(r, tagsOf.get(r.id) ?? [])),
      query,
    )
  }

  // ---- writing records ----

  async create(principal: Principal, body: Record<string, unknown>): Promise<ImageRecord> {
    authorize(imagePolicy, 'add_image', principal)
    const viewer = viewerOf(principal)
    if (!viewer.projectId && !viewer.setsOwner) throw new AppError('forbidden', 'Creating an image needs a project-scoped token.')
    // Admins may create an image for another project (openstack image create --project); otherwise owner is read-only.
    let owner = viewer.projectId ?? null
    if ('owner' in body && viewer.setsOwner) {
      if (typeof body.owner !== 'string' || body.owner === '' || body.owner.length > 255) throw badRequest("Invalid value for 'owner': expected a project id.")
      owner = body.owner
    }
    for (const key of Object.keys(body)) {
      if (READ_ONLY_ATTRIBUTES.has(key) && !(key === 'owner' && viewer.setsOwner)) throw new AppError('forbidden', `Attribute '${key}' is read-only.`)
    }
    const core = validateCore(body)
    const properties = validateProperties(Object.fromEntries(Object.entries(body).filter(([k]) => !CORE_ATTRIBUTES.has(k))))
    if (core.visibility === 'public') authorize(imagePolicy, 'publicize_image', principal)
    let id: string = randomUUID()
    if ('id' in body) {
      if (typeof body.id !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(body.id)) {
        throw badRequest("Invalid value for 'id': expected a UUID.")
      }
      id = body.id.toLowerCase()
    }
    const now = this.now()
    await this.store.db.transaction().execute(async (tx) => {
      if (await tx.selectFrom('images').select('id').where('id', '=', id).executeTakeFirst()) throw conflict(`An image with identifier ${id} already exists`)
      await tx
        .insertInto('images')
        .values({
          id,
          rev: 0,
          name: core.name ?? null,
          owner,
          status: 'queued',
          visibility: core.visibility ?? 'shared',
          protected: core.protected ? 1 : 0,
          os_hidden: core.os_hidden ? 1 : 0,
          disk_format: core.disk_format ?? null,
          container_format: core.container_format ?? null,
          size: null,
          virtual_size: null,
          checksum: null,
          os_hash_algo: null,
          os_hash_value: null,
          min_disk: core.min_disk ?? 0,
          min_ram: core.min_ram ?? 0,
          properties: JSON.stringify(properties),
          blob_key: null,
          created_at: now,
          updated_at: now,
        })
        .execute()
      for (const tag of core.tags ?? []) await tx.insertInto('image_tags').values({ image_id: id, tag }).execute()
    })
    return (await this.load(this.store.db, id))!
  }

  /** Applies a Glance JSON patch; all or nothing. */
  async update(principal: Principal, id: string, operations: unknown): Promise<ImageRecord> {
    const viewer = viewerOf(principal)
    return this.store.db.transaction().execute(async (tx) => {
      // Also keeps the patch's read current until the commit: a concurrent PATCH is not lost.
      await this.lockFirst(tx, id)
      const image = await this.find(viewer, id, tx)
      authorize(imagePolicy, 'modify_image', principal, { projectId: image.owner ?? undefined })
      const draft: ImageDraft = {
        core: {
          name: image.name,
          visibility: image.visibility,
          protected: image.protected,
          os_hidden: image.osHidden,
          disk_format: image.diskFormat,
          container_format: image.containerFormat,
          min_disk: image.minDisk,
          min_ram: image.minRam,
          tags: image.tags,
          owner: image.owner,
        },
        properties: { ...image.properties },
      }
      applyPatch(draft, operations, viewer.setsOwner ? ADMIN_WRITABLE : undefined)
      const owner = draft.core.owner
      if (owner !== image.owner && (typeof owner !== 'string' || owner === '' || owner.length > 255)) throw badRequest("Invalid value for 'owner': expected a project id.")
      const core = validateCore(draft.core)
      const properties = validateProperties(draft.properties)
      if (core.visibility === 'public' && image.visibility !== 'public') authorize(imagePolicy, 'publicize_image', principal)
      // Formats describe the bytes: once they are there, they are fixed (Glance answers 403).
      if (image.status !== 'queued') {
        for (const [field, before] of [['disk_format', image.diskFormat], ['container_format', image.containerFormat]] as const) {
          if (core[field] !== before) throw new AppError('forbidden', `Attribute ${field} can be only replaced for a queued image.`)
        }
      }
      await tx
        .updateTable('images')
        .set({
          name: core.name ?? null,
          visibility: core.visibility!,
          protected: core.protected ? 1 : 0,
          os_hidden: core.os_hidden ? 1 : 0,
          disk_format: core.disk_format ?? null,
          container_format: core.container_format ?? null,
          min_disk: core.min_disk!,
          min_ram: core.min_ram!,
          owner: owner as string | null,
          properties: JSON.stringify(properties),
          updated_at: this.now(),
        })
        .where('id', '=', id)
        .execute()
      const tags = core.tags ?? []
      if (tags.join('\n') !== image.tags.join('\n')) {
        await tx.deleteFrom('image_tags').where('image_id', '=', id).execute()
        for (const tag of tags) await tx.insertInto('image_tags').values({ image_id: id, tag }).execute()
      }
      return (await this.load(tx, id))!
    })
  }

  async delete(principal: Principal, id: string): Promise<void> {
    const viewer = viewerOf(principal)
    const blobKey = await this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const image = await this.find(viewer, id, tx)
      authorize(imagePolicy, 'delete_image', principal, { projectId: image.owner ?? undefined })
      if (image.protected) throw new AppError('forbidden', `Image ${id} is protected and cannot be deleted.`)
      await tx.deleteFrom('image_tags').where('image_id', '=', id).execute()
      await tx.deleteFrom('image_members').where('image_id', '=', id).execute()
      await tx.deleteFrom('images').where('id', '=', id).execute()
      return image.blobKey
    })
    if (blobKey) await this.blobs.delete(blobKey)
  }

  async setStatusAction(principal: Principal, id: string, action: 'deactivate' | 'reactivate'): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      const image = await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, action, principal, { projectId: image.owner ?? undefined })
      const [from, to] = action === 'deactivate' ? ['active', 'deactivated'] : ['deactivated', 'active']
      if (image.status === to) return
      if (image.status !== from) throw badRequest(`Not allowed to ${action} an image in status '${image.status}'.`)
      await tx.updateTable('images').set({ status: to, updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  async addTag(principal: Principal, id: string, tag: string): Promise<void> {
    if (tag.length === 0 || tag.length > 255) throw badRequest('A tag must be 1 to 255 characters long.')
    await this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const image = await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, 'modify_image', principal, { projectId: image.owner ?? undefined })
      if (image.tags.includes(tag)) return
      if (image.tags.length >= 128) throw new AppError('over_limit', 'Maximum number of tags exceeded (128).')
      await tx.insertInto('image_tags').values({ image_id: id, tag }).execute()
      await tx.updateTable('images').set({ updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  async deleteTag(principal: Principal, id: string, tag: string): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      await this.lockFirst(tx, id)
      const image = await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, 'modify_image', principal, { projectId: image.owner ?? undefined })
      if (!image.tags.includes(tag)) throw notFound(`Tag ${tag} not found.`)
      await tx.deleteFrom('image_tags').where('image_id', '=', id).where('tag', '=', tag).execute()
      await tx.updateTable('images').set({ updated_at: this.now() }).where('id', '=', id).execute()
    })
  }

  // ---- bytes ----

  /**
   * Streams `source` into the blob store: queued → saving → active. A failed upload (too large, client gone)
   * leaves the image killed and no bytes behind.
   */
  async upload(principal: Principal, id: string, source: Readable): Promise<ImageRecord> {
    const image = await this.find(viewerOf(principal), id)
    authorize(imagePolicy, 'upload_image', principal, { projectId: image.owner ?? undefined })
    return this.receive(id, (key, options) => this.blobs.put(key, source, options))
  }

  /** Takes the queued image through saving to active, its bytes stored by `put` under its blob key. */
  private async receive(id: string, put: (blobKey: string, options: PutOptions) => Promise<BlobDigests>): Promise<ImageRecord> {
    const db = this.store.db
    await db.transaction().execute(async (tx) => {
      const current = await tx.selectFrom('images').select(['status', 'disk_format', 'container_format']).where('id', '=', id).executeTakeFirst()
      if (!current) throw notFound(`No image found with ID ${id}`)
      if (current.status !== 'queued') throw conflict(`Image status transition from ${current.status} to saving is not allowed`)
      if (!current.disk_format || !current.container_format) throw badRequest('Properties disk_format, container_format must be set prior to saving data.')
      await tx.updateTable('images').set({ status: 'saving', updated_at: this.now() }).where('id', '=', id).execute()
    })
    const blobKey = `images/${id}`
    let digests
    // While bytes arrive, updated_at is kept fresh: an image left in saving with a stale one belongs to an
    // upload whose process died (see sweepStaleUploads).
    const beat = setInterval(() => {
      void db.updateTable('images').set({ updated_at: this.now() }).where('id', '=', id).where('status', '=', 'saving').execute().catch(() => {})
    }, UPLOAD_HEARTBEAT_MS)
    beat.unref()
    try {
      digests = await put(blobKey, { maxBytes: this.options.maxImageBytes })
    } catch (err) {
      await db.updateTable('images').set({ status: 'killed', updated_at: this.now() }).where('id', '=', id).where('status', '=', 'saving').execute()
      if (err instanceof BlobTooLargeError) {
        throw new AppError('payload_too_large', `Image exceeds the storage quota: the largest image accepted is ${err.maxBytes} bytes.`)
      }
      throw badRequest(`The image data could not be received: ${(err as Error).message}`, { cause: err })
    } finally {
      clearInterval(beat)
    }
    const updated = await db
      .updateTable('images')
      .set({
        status: 'active',
        size: digests.size,
        virtual_size: null,
        checksum: digests.md5,
        os_hash_algo: 'sha512',
        os_hash_value: digests.sha512,
        blob_key: blobKey,
        updated_at: this.now(),
      })
      .where('id', '=', id)
      .where('status', '=', 'saving')
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) === 0) {
      // Deleted while the bytes were arriving: drop them.
      await this.blobs.delete(blobKey)
      throw conflict(`Image ${id} was deleted during the upload.`)
    }
    return (await this.load(db, id))!
  }

  /** The bytes of a visible image; undefined when it has none yet (Glance answers 204). */
  async download(principal: Principal, id: string): Promise<{ image: ImageRecord; stream: Readable; size: number } | { image: ImageRecord; stream?: undefined }> {
    authorize(imagePolicy, 'download_image', principal)
    const image = await this.find(viewerOf(principal), id)
    if (image.status === 'deactivated') {
      authorize(imagePolicy, 'download_deactivated', principal)
    }
    if (!image.blobKey || (image.status !== 'active' && image.status !== 'deactivated')) return { image }
    const { stream, size } = await this.blobs.open(image.blobKey)
    return { image, stream, size }
  }

  // ---- members ----

  async listMembers(principal: Principal, id: string): Promise<ImageMember[]> {
    const viewer = viewerOf(principal)
    const image = await this.find(viewer, id)
    if (image.visibility !== 'shared') throw new AppError('forbidden', 'Only shared images have members.')
    const rows = await this.store.db.selectFrom('image_members').selectAll().where('image_id', '=', id).orderBy('created_at').execute()
    // A consumer sees only its own membership.
    const visible = viewer.visibility === 'all_projects' || image.owner === viewer.projectId ? rows : rows.filter((r) => r.member_id === viewer.projectId)
    return visible.map(toMember)
  }

  async getMember(principal: Principal, id: string, memberId: string): Promise<ImageMember> {
    const member = (await this.listMembers(principal, id)).find((m) => m.memberId === memberId)
    if (!member) throw notFound(`Member ${memberId} not found for image ${id}.`)
    return member
  }

  async addMember(principal: Principal, id: string, memberId: string): Promise<ImageMember> {
    if (typeof memberId !== 'string' || memberId === '' || memberId.length > 255) throw badRequest("Invalid value for 'member'.")
    return this.store.db.transaction().execute(async (tx) => {
      const image = await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, 'add_member', principal, { projectId: image.owner ?? undefined })
      if (image.visibility !== 'shared') throw new AppError('forbidden', `Image ${id} is not shared: only shared images have members.`)
      if (await tx.selectFrom('image_members').select('member_id').where('image_id', '=', id).where('member_id', '=', memberId).executeTakeFirst()) {
        throw conflict(`Member ${memberId} already exists for image ${id}.`)
      }
      const now = this.now()
      await tx.insertInto('image_members').values({ image_id: id, member_id: memberId, status: 'pending', created_at: now, updated_at: now }).execute()
      return { imageId: id, memberId, status: 'pending', createdAt: now, updatedAt: now }
    })
  }

  async updateMember(principal: Principal, id: string, memberId: string, status: string): Promise<ImageMember> {
    if (!(MEMBER_STATUSES as readonly string[]).includes(status)) throw badRequest(`Invalid value '${status}' for 'status': expected pending, accepted or rejected.`)
    return this.store.db.transaction().execute(async (tx) => {
      await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, 'modify_member', principal, { projectId: memberId })
      const row = await tx.selectFrom('image_members').selectAll().where('image_id', '=', id).where('member_id', '=', memberId).executeTakeFirst()
      if (!row) throw notFound(`Member ${memberId} not found for image ${id}.`)
      const now = this.now()
      await tx.updateTable('image_members').set({ status, updated_at: now }).where('image_id', '=', id).where('member_id', '=', memberId).execute()
      return { ...toMember(row), status, updatedAt: now }
    })
  }

  async deleteMember(principal: Principal, id: string, memberId: string): Promise<void> {
    await this.store.db.transaction().execute(async (tx) => {
      const image = await this.find(viewerOf(principal), id, tx)
      authorize(imagePolicy, 'delete_member', principal, { projectId: image.owner ?? undefined })
      const result = await tx.deleteFrom('image_members').where('image_id', '=', id).where('member_id', '=', memberId).executeTakeFirst()
      if (Number(result.numDeletedRows) === 0) throw notFound(`Member ${memberId} not found for image ${id}.`)
    })
  }

  // ---- for compute ----

  /**
   * The image a server in `projectId` may boot from. Nova's rules for imageRef: an image that does not exist
   * or is not visible is 400 "Can not find requested image"; one that is not active is 400 as well. `visibility`
   * is the caller's, decided by its route's policy (all_projects: every project's images).
   */
  async getVisibleImage(projectId: string, visibility: Visibility, imageId: string, db: Db = this.store.db): Promise<ImageRecord> {
    const image = await this.load(db, imageId)
    if (!image || !(await this.canSee(db, { projectId, visibility, setsOwner: false }, image))) throw badRequest('Can not find requested image')
    if (image.status !== 'active') throw badRequest(`Image ${imageId} is not active.`)
    return image
  }

  /** A queued image record for createImage or shelve; its bytes come with `completeSnapshotImage`. */
  async createSnapshotImage(request: SnapshotImageRequest, db: Db = this.store.db): Promise<ImageRecord> {
    const id = randomUUID()
    const now = this.now()
    const imageType = request.imageType === undefined ? 'snapshot' : request.imageType
    const properties = validateProperties({ ...(imageType ? { image_type: imageType } : {}), ...request.properties })
    await db
      .insertInto('images')
      .values({
        id,
        rev: 0,
        name: request.name,
        owner: request.projectId,
        status: 'queued',
        visibility: request.visibility ?? 'private',
        protected: 0,
        os_hidden: 0,
        disk_format: request.diskFormat ?? 'qcow2',
        container_format: request.containerFormat ?? 'bare',
        size: null,
        virtual_size: null,
        checksum: null,
        os_hash_algo: null,
        os_hash_value: null,
        min_disk: request.minDisk ?? 0,
        min_ram: request.minRam ?? 0,
        properties: JSON.stringify(properties),
        blob_key: null,
        created_at: now,
        updated_at: now,
      })
      .execute()
    return (await this.load(db, id))!
  }

  /**
   * Stores the snapshot's bytes (from the compute driver) and makes the image active. `formats` are the ones the
   * driver produced, recorded first when they differ from the queued image's.
   */
  /**
   * A server snapshot into its queued image: bytes streamed, or (a guest disk in Ceph) an RBD snapshot the image
   * store copies inside Ceph, when the store is there too.
   */
  async completeSnapshotImage(imageId: string, data: Readable | RbdSnapshotRef, formats?: { diskFormat: string; containerFormat: string }): Promise<ImageRecord> {
    if (formats) {
      await this.store.db
        .updateTable('images')
        .set({ disk_format: formats.diskFormat, container_format: formats.containerFormat, updated_at: this.now() })
        .where('id', '=', imageId)
        .where('status', '=', 'queued')
        .execute()
    }
    if (!(data instanceof Readable)) {
      const copy = this.blobs.copyFromRbd
      if (!copy) throw conflict('The image store is not in Ceph: a snapshot of a disk in Ceph must be uploaded as bytes.')
      return this.receive(imageId, (key, options) => copy(key, data, options))
    }
    return this.receive(imageId, (key, options) => this.blobs.put(key, data, options))
  }

  /**
   * Removes an image compute made and no longer needs (the snapshot of a shelved server, once unshelved or
   * deleted) inside the caller's transaction; returns the key of its bytes, for `removeBlob` after the commit.
   */
  async removeImage(imageId: string, db: Db = this.store.db): Promise<string | null> {
    const row = await db.selectFrom('images').select('blob_key').where('id', '=', imageId).executeTakeFirst()
    if (!row) return null
    await this.lockFirst(db, imageId)
    await db.deleteFrom('image_tags').where('image_id', '=', imageId).execute()
    await db.deleteFrom('image_members').where('image_id', '=', imageId).execute()
    await db.deleteFrom('images').where('id', '=', imageId).execute()
    return row.blob_key
  }

  async removeBlob(blobKey: string | null): Promise<void> {
    if (blobKey) await this.blobs.delete(blobKey)
  }

  /**
   * Kills images left in `saving` by uploads whose process died: their heartbeat (updated_at) is older than
   * four beats. Run at start; safe with other processes uploading, whose images stay fresh.
   */
  async sweepStaleUploads(): Promise<number> {
    const result = await this.store.db
      .updateTable('images')
      .set({ status: 'killed', updated_at: this.now() })
      .where('status', '=', 'saving')
      .where('updated_at', '<', this.now() - 4 * UPLOAD_HEARTBEAT_MS)
      .executeTakeFirst()
    return Number(result.numUpdatedRows)
  }

  /** Marks a snapshot image that could not be made as killed (Nova deletes it; keeping it tells the user why). */
  async killImage(imageId: string): Promise<void> {
    await this.store.db.updateTable('images').set({ status: 'killed', updated_at: this.now() }).where('id', '=', imageId).where('status', 'in', ['queued', 'saving']).execute()
  }

  /** The bytes of any image by id (block storage copying an image it already checked into a volume). */
  async openBytes(imageId: string): Promise<{ stream: Readable; size: number }> {
    const image = await this.load(this.store.db, imageId)
    if (!image?.blobKey) throw notFound(`Image ${imageId} has no data.`)
    return this.blobs.open(image.blobKey)
  }

  /** Any image by id regardless of visibility (compute reading an image it already checked). */
  async getById(imageId: string, db: Db = this.store.db): Promise<ImageRecord | undefined> {
    return this.load(db, imageId)
  }
}

function toMember(row: { image_id: string; member_id: string; status: string; created_at: number; updated_at: number }): ImageMember {
  return { imageId: row.image_id, memberId: row.member_id, status: row.status, createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) }
}
