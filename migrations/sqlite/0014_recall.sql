-- Palaver's SQLite schema, version 14: message versions and recalls, as the MariaDB tables have had since the
-- tenant migration 0001. `version` starts at 1 and grows with each change of a stored message (a deletion, a
-- recall); a sender's recall of their own message is stored as status 'recalled' with who and when
-- (`recalled_by`, `recalled_at` in Unix milliseconds), an admin's hard delete as 'deleted'.
ALTER TABLE im_group_messages ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE im_group_messages ADD COLUMN recalled_at INTEGER NULL;
ALTER TABLE im_group_messages ADD COLUMN recalled_by INTEGER NULL;
ALTER TABLE im_messages ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE im_messages ADD COLUMN recalled_at INTEGER NULL;
ALTER TABLE im_messages ADD COLUMN recalled_by INTEGER NULL;
