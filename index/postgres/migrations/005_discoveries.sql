-- Each domain's discovery of shared drives (DESIGN §10): one set for every
-- replica, written under the lease of the domain's storage account. The
-- revision grows whenever the drives change, so that replicas notice.
CREATE TABLE discoveries (
    domain          text PRIMARY KEY,
    storage_account text NOT NULL,
    at              timestamptz,
    error           bytea NOT NULL,
    revision        bigint NOT NULL
);

-- The drives each domain's last discovery that succeeded found. IDs sort
-- byte by byte (COLLATE "C"), as Go's strings do; names are bytes, as
-- folders' are: Drive allows what PostgreSQL's text does not (NUL).
CREATE TABLE discovered_drives (
    domain text NOT NULL REFERENCES discoveries,
    id     text COLLATE "C" NOT NULL,
    name   bytea NOT NULL,
    hidden boolean NOT NULL,
    PRIMARY KEY (domain, id)
);

-- The last revision of each library deleted (a drive discovery no longer
-- finds): synced again, the library goes on from there, so that a reader
-- still holding its old tree reads it anew.
CREATE TABLE retired_libraries (
    id       text PRIMARY KEY,
    revision bigint NOT NULL
);
