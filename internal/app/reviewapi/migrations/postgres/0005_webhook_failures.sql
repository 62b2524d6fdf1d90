-- Consecutive failed delivery attempts of each webhook, set back to 0 by a
-- success: past a few, the webhook's attempts get a shorter timeout and its
-- retries a longer wait.
ALTER TABLE reviewapi_webhooks ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
