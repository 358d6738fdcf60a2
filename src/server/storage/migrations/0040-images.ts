import type { Kysely } from 'kysely'

/** The image service: images, their tags and members. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('images')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .addColumn('owner', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('protected', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('os_hidden', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disk_format', 'text')
    .addColumn('container_format', 'text')
    .addColumn('size', 'bigint')
    .addColumn('virtual_size', 'bigint')
    .addColumn('checksum', 'text')
    .addColumn('os_hash_algo', 'text')
    .addColumn('os_hash_value', 'text')
    .addColumn('min_disk', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('min_ram', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('properties', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('blob_key', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('images_owner').on('images').columns(['owner']).execute()
  await db.schema.createIndex('images_created').on('images').columns(['created_at', 'id']).execute()

  await db.schema
    .createTable('image_tags')
    .addColumn('image_id', 'text', (c) => c.notNull().references('images.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('image_tags_pk', ['image_id', 'tag'])
    .execute()

  await db.schema
    .createTable('image_members')
    .addColumn('image_id', 'text', (c) => c.notNull().references('images.id').onDelete('cascade'))
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('image_members_pk', ['image_id', 'member_id'])
    .execute()
  await db.schema.createIndex('image_members_member').on('image_members').columns(['member_id']).execute()
}
