package dev.handoff.benchmarks.ledger;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the consumer of one run sent per batch: its batches and the entries they held, its database transactions, and
 * the Redis calls attributed to it from the server's {@code INFO commandstats} difference over the run.
 *
 * <p>Redis is shared with the relay and the run's sampler, so only commands that neither sends are attributed:
 * {@code XREADGROUP}, {@code XACK}, {@code XAUTOCLAIM}, {@code XGROUP|CREATE} (all sent by the consumer itself) and
 * {@code XCLAIM} and {@code XGROUP|DELCONSUMER} (called inside the consumer's lease-renewal, retry and clean-up
 * scripts only). {@code EVALSHA} (the relay's publish and trim scripts, the consumer's scripts, the sampler's
 * stream count) and {@code XPENDING} (inside the consumer's scripts, the relay's trim and the sampler's status) are
 * shared: their totals are kept in {@code shared}, not attributed. The raw pipeline's consumer sends only
 * {@code XREADGROUP} and {@code XACK}.
 *
 * @param batches batches the consumer committed (handoff: {@code ConsumerListener.batchCommitted}; raw: its loop)
 * @param entries entries in those batches
 * @param databaseCommits the consumer's committed database transactions, counted as PostgreSQL counts them
 * @param attributed calls of the consumer-only commands, by command
 * @param shared calls of the commands the consumer shares with others, by command, not attributed
 */
record ConsumerTrips(long batches, long entries, long databaseCommits, Map<String, Long> attributed,
    Map<String, Long> shared) {

  /** Sent by the consumer alone in a run: attributed to it. */
  static final List<String> CONSUMER_COMMANDS = List.of("xreadgroup", "xack", "xautoclaim", "xclaim",
      "xgroup|create", "xgroup|delconsumer");
  /** Sent by the consumer and by the relay or the sampler: not attributed. */
  static final List<String> SHARED_COMMANDS = List.of("evalsha", "eval", "xpending");

  ConsumerTrips {
    attributed = Map.copyOf(attributed);
    shared = Map.copyOf(shared);
  }

  static ConsumerTrips of(long batches, long entries, long databaseCommits, RedisCommandStats run) {
    Map<String, Long> attributed = new TreeMap<>();
    for (String c : CONSUMER_COMMANDS) {
      attributed.put(c, run.of(c));
    }
    Map<String, Long> shared = new TreeMap<>();
    for (String c : SHARED_COMMANDS) {
      shared.put(c, run.of(c));
    }
    return new ConsumerTrips(batches, entries, databaseCommits, attributed, shared);
  }

  double meanBatch() {
    return perBatch(entries);
  }

  /** Calls of a consumer-only command per batch. */
  double perBatch(String command) {
    return perBatch(attributed.getOrDefault(command, 0L));
  }

  double databaseCommitsPerBatch() {
    return perBatch(databaseCommits);
  }

  private double perBatch(long n) {
    return batches == 0 ? Double.NaN : n / (double) batches;
  }
}
