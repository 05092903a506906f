-- storage: Supabase Storage's buckets and objects, per app, with the bytes' bookkeeping and each app's limits
-- Versioned: applied once, never edited after a release. The design (authorisation, consistency, limits) is written
-- at the head of repeatable/16_storage.sql, which holds the functions, triggers, policies and grants.
--
-- storage.buckets and storage.objects have Supabase's columns and names, so an app's policies read as on Supabase
-- (bucket_id, name, owner, owner_id, metadata, storage.foldername(name)), plus app_id (the tenant: every key of a
-- bucket or an object starts with it) and device_id (the uploading device, for policies on auth.device_id()).
-- The bytes live in a backend (file system or S3) under `<app id>/<version>`; the row's version names the live one.

create schema if not exists storage;

create table storage.buckets (
    app_id uuid not null references guestpass.apps (id) on delete cascade,
    id text not null,
    name text not null,
    owner uuid,
    owner_id text,
    public boolean not null default false,
    file_size_limit bigint constraint buckets_file_size_limit_check check (file_size_limit > 0),
    allowed_mime_types text[] constraint buckets_allowed_mime_types_check check (
        cardinality(allowed_mime_types) <= 100 and array_position(allowed_mime_types, null) is null
    ),
    type text not null default 'STANDARD' constraint buckets_type_check check (type = 'STANDARD'),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint buckets_pkey primary key (app_id, id),
    constraint buckets_name_check check (
        id = name and char_length(id) between 1 and 100 and id ~ '^[A-Za-z0-9_!.*''() &$=@;:+,?-]+$'
    )
);

comment on table storage.buckets is
    'Storage buckets, one app''s each (two apps may each have a bucket named photos). A public bucket''s name is '
    'unique across apps: its objects are served at /storage/v1/object/public/<bucket>/<key> with no key or token.';

-- Public downloads carry no API key: the bucket's name alone must find its app.
create unique index buckets_public_id_key on storage.buckets (id) where public;

create table storage.objects (
    app_id uuid not null,
    id uuid not null default gen_random_uuid(),
    bucket_id text not null,
    name text not null,
    owner uuid,
    owner_id text generated always as (owner::text) stored,
    device_id uuid,
    version text not null,
    -- The store holding the bytes (`file:<root>`, `s3:<endpoint>/<bucket>`): servers delete only their own store's.
    store text not null constraint objects_store_check check (char_length(store) between 1 and 2048),
    metadata jsonb not null default '{}' constraint objects_metadata_check check (jsonb_typeof(metadata) = 'object'),
    user_metadata jsonb constraint objects_user_metadata_check check (
        jsonb_typeof(user_metadata) = 'object' and octet_length(user_metadata::text) <= 1048576
    ),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    last_accessed_at timestamptz not null default now(),
    constraint objects_pkey primary key (id),
    constraint objects_bucket_fkey foreign key (app_id, bucket_id) references storage.buckets (app_id, id),
    -- The uploader; an account's deletion removes its objects (and, through the trigger, their bytes); a merge moves
    -- them to the account (guestpass.user_references).
    constraint objects_owner_fkey foreign key (owner, app_id) references public.users (id, app_id) on delete cascade,
    constraint objects_name_check check (char_length(name) between 1 and 1024 and octet_length(name) <= 1024),
    constraint objects_version_check check (version ~ '^[0-9a-f-]{36}$')
);

comment on table storage.objects is
    'Storage objects: one row per key of a bucket, under row-level security (the app''s own policies, Supabase''s). '
    'metadata is the system metadata (size, mimetype, cacheControl, eTag, …), user_metadata the uploader''s.';

create unique index objects_bucket_name_key on storage.objects (app_id, bucket_id, name);
-- list(): a prefix search inside one bucket, in byte order.
create index objects_bucket_name_prefix_idx on storage.objects (app_id, bucket_id, name text_pattern_ops);
create index objects_owner_idx on storage.objects (owner, app_id) where owner is not null;

-- Each user's stored bytes and objects, kept exact by the objects trigger (a row lock serialises one user's
-- concurrent uploads), checked against the app's limits.
create table guestpass.storage_usage (
    app_id uuid not null,
    user_id uuid not null,
    bytes bigint not null default 0 constraint storage_usage_bytes_check check (bytes >= 0),
    objects integer not null default 0 constraint storage_usage_objects_check check (objects >= 0),
    constraint storage_usage_pkey primary key (user_id),
    constraint storage_usage_user_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade
);

-- Backend keys whose bytes may be unreferenced: an upload in flight (not before its grace period ends), or the
-- previous version of a replaced or removed object (due at once). The sweep deletes the bytes, then the row.
create table guestpass.storage_sweep (
    key text not null,
    app_id uuid not null,
    kind text not null constraint storage_sweep_kind_check check (kind in ('upload', 'replaced')),
    store text not null,
    not_before timestamptz not null,
    claimed_at timestamptz,
    attempts integer not null default 0,
    constraint storage_sweep_pkey primary key (key)
);

create index storage_sweep_due_idx on guestpass.storage_sweep (store, not_before);

-- Each app's storage limits, set by `guestpass apps configure`.
alter table guestpass.apps
    add column storage_upload_bytes_limit bigint not null default 52428800
        constraint apps_storage_upload_bytes_limit_check check (storage_upload_bytes_limit between 1 and 5497558138880),
    add column storage_user_bytes_limit bigint not null default 104857600
        constraint apps_storage_user_bytes_limit_check check (storage_user_bytes_limit between 0 and 1099511627776000),
    add column storage_user_objects_limit integer not null default 1000
        constraint apps_storage_user_objects_limit_check check (storage_user_objects_limit between 0 and 100000000);

comment on column guestpass.apps.storage_upload_bytes_limit is
    'Storage: the largest object one upload may store (a bucket''s file_size_limit may lower it). Default 50 MiB.';
comment on column guestpass.apps.storage_user_bytes_limit is
    'Storage: the bytes one user''s objects may hold in all (the app''s backend, uploading with its secret key, has '
    'no such limit). Default 100 MiB.';
comment on column guestpass.apps.storage_user_objects_limit is
    'Storage: the objects one user may hold. Default 1000.';
