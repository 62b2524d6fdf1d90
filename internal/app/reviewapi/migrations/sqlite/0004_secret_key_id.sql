-- The signing secret of a webhook is encrypted (AES-256-GCM under a key
-- kept outside the database, see docs/security.md); secret_key_id names the
-- key that sealed it. A row written before has NULL here and its secret in
-- plaintext: the service encrypts such rows when it starts.
ALTER TABLE reviewapi_webhooks ADD COLUMN secret_key_id TEXT;
