-- Fencing: each taking of a lease gets an epoch from a sequence, greater
-- than every one before, and every write made under the lease checks, in
-- its own transaction, that the lease still has that epoch; a process
-- whose lease lapsed cannot commit. Full syncs write new generations
-- numbered from a sequence too, so that two never share one.

CREATE SEQUENCE lease_epochs;
ALTER TABLE leases ADD COLUMN epoch bigint NOT NULL DEFAULT nextval('lease_epochs');
ALTER TABLE leases ADD CONSTRAINT leases_epoch_key UNIQUE (epoch);

CREATE SEQUENCE generations;
SELECT setval('generations', 1 + greatest(
    (SELECT coalesce(max(generation), 0) FROM libraries),
    (SELECT coalesce(max(generation), 0) FROM folders),
    (SELECT coalesce(max(generation), 0) FROM permission_sets)), false);
