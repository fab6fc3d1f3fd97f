-- Earlier versions sorted the permission lists a sync made from a parent's
-- (shared-drive folders that only inherit, and those an incremental sync
-- made again) by permission ID, not in Drive's order. Dropping each
-- library's changes token makes its next sync a full one, which writes
-- them again; until it ends, the index serves what it holds.
UPDATE libraries SET start_page_token = '';
