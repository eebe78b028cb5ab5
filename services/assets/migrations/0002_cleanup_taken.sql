-- The janitor takes due cleanup records in one short statement (taken_at set, due_at moved
-- to the end of its lease), removes their objects with no transaction open, then drops the
-- records in another. A taken record can no longer be claimed by an upload (its object may
-- be gone already); one whose janitor died comes due again when the lease ends.
ALTER TABLE object_cleanup ADD COLUMN taken_at timestamptz;
