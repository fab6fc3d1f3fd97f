-- Drive push channels (changes.watch): one set for the whole service, kept
-- under the push lease. Only the SHA-256 of each channel's secret token is
-- stored, never the token itself.
CREATE TABLE push_channels (
    id           text PRIMARY KEY,
    token_sha256 bytea NOT NULL CHECK (octet_length(token_sha256) = 32),
    feed         text NOT NULL,
    resource_id  text NOT NULL,
    expiration   timestamptz NOT NULL
);
