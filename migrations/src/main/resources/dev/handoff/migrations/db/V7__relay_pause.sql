-- A shard whose relay stopped publishing after it found that the database went back in time (a failover to a
-- standby that had not received the last commits), with RelayBuilder.pauseOnDatabaseRewind: set by the relay that
-- found it, read by every relay that takes the lease, cleared by the operator (handoff resume). NULL: publishing.
ALTER TABLE relay_lease ADD COLUMN paused_at timestamptz, ADD COLUMN paused_reason text;
