package dev.handoff.relay;

/**
 * What one pass of a relay did.
 *
 * @param ownedShards shards this relay wrote during the pass
 * @param assigned rows that got stream IDs
 * @param published rows confirmed in their stream and marked published
 * @param republished rows queued again because Redis lost their stream
 */
public record RelayCycle(int ownedShards, int assigned, int published, long republished) {}
