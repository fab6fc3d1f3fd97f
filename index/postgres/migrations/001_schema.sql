-- foldermirror's index in PostgreSQL: what the bbolt index keeps (see
-- index/index.go), in tables shared by every replica of one service.

-- One row per synced library: its state and the generation of its tree.
CREATE TABLE libraries (
    id                         text PRIMARY KEY,
    generation                 bigint NOT NULL,
    root_id                    text NOT NULL,
    drive_id                   text NOT NULL,
    sharing_requires_organizer boolean NOT NULL,
    start_page_token           text NOT NULL,
    last_full_sync             timestamptz,
    last_incremental_sync      timestamptz,
    folders                    bigint NOT NULL,
    permissions                bigint NOT NULL,
    revision                   bigint NOT NULL,
    -- The change log holds every change of the revisions from log_start on.
    log_start                  bigint NOT NULL,
    log_entries                bigint NOT NULL
);

-- A library's folders, by generation: a full sync writes a new one, then
-- switches the library's row to it in one transaction. Names and other
-- strings from Drive are bytes: Drive allows what PostgreSQL's text does not
-- (NUL).
CREATE TABLE folders (
    library        text NOT NULL,
    generation     bigint NOT NULL,
    id             text NOT NULL,
    parent_id      text NOT NULL,
    name           bytea NOT NULL,
    resource_key   bytea NOT NULL,
    definition_id  bytea NOT NULL,
    flags          smallint NOT NULL,
    permission_set bytea NOT NULL,
    own_set        bytea NOT NULL,
    PRIMARY KEY (library, generation, id)
);
CREATE INDEX folders_by_parent ON folders (library, generation, parent_id);

-- Distinct permission lists, by the key folders refer to them by
-- (foldermirror.PermissionSetKey), with the count of references.
CREATE TABLE permission_sets (
    library    text NOT NULL,
    generation bigint NOT NULL,
    key        bytea NOT NULL,
    size       integer NOT NULL,
    list       bytea NOT NULL,
    refs       bigint NOT NULL,
    PRIMARY KEY (library, generation, key)
);

-- The folders each revision of a library wrote or removed.
CREATE TABLE changes (
    library   text NOT NULL,
    revision  bigint NOT NULL,
    folder_id text NOT NULL,
    PRIMARY KEY (library, revision, folder_id)
);

-- Each domain's latest directory snapshot, as JSON; version grows with
-- each replacement, so that replicas notice.
CREATE TABLE directories (
    domain   text PRIMARY KEY,
    snapshot bytea NOT NULL,
    version  bigint NOT NULL
);

-- Sync leases: while a process holds a library's (or a directory's), no
-- other syncs it. A lease lapses at expires_at unless its holder renews it.
CREATE TABLE leases (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- When each job's last scheduled run of each kind began, so that replicas
-- together run a schedule no more often than one process would.
CREATE TABLE scheduled_runs (
    name       text NOT NULL,
    kind       text NOT NULL,
    started_at timestamptz NOT NULL,
    holder     text NOT NULL,
    PRIMARY KEY (name, kind)
);
