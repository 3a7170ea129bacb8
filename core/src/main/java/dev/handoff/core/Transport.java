package dev.handoff.core;

/**
 * Which Redis structure the relay hands messages to. The outbox, the leases, the fencing and the exactly-once
 * hand-off are the same for both; what differs is how consumers take the work and how it is recovered.
 */
public enum Transport {

  /**
   * One Redis stream per (topic, shard), read by consumer groups ({@code StreamConsumer}). Several groups can read
   * the same messages; Redis keeps the pending entries of each group. The default.
   */
  STREAM,

  /**
   * One Redis list per (topic, shard), used as a reliable queue ({@code ListConsumer}): the relay RPUSHes, each
   * consumer BLMOVEs elements into a processing list of its own and LREMs them after its commit; handoff's own
   * heartbeats and reaper recover the work of dead consumers. One consumer group per topic (a list element goes to
   * one consumer); the relay stops pushing at a configured capacity and the outbox holds the rest. For Redis
   * deployments or proxies without streams, and teams whose tooling is built around lists. See {@link ListFormat}.
   */
  LIST
}
