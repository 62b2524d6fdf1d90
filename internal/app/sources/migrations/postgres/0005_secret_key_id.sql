-- The token and push_secret of a source are encrypted (AES-256-GCM under a
-- key kept outside the database, see docs/security.md); secret_key_id names
-- the key that sealed them. A row written before has NULL here and its
-- values in plaintext: the service encrypts such rows when it starts.
ALTER TABLE sources ADD COLUMN secret_key_id TEXT;
