-- Palaver's tenant database, version 15: deleted accounts. An account its owner or an admin deleted keeps its
-- row in state 'deleted' (so the messages it sent still name a sender) and never logs in again. Repeatable: the
-- check is dropped if present and added back with the new state.

ALTER TABLE users DROP CONSTRAINT IF EXISTS ck_users_state;
ALTER TABLE users ADD CONSTRAINT ck_users_state CHECK (state IN ('active', 'suspended', 'deleted'));
