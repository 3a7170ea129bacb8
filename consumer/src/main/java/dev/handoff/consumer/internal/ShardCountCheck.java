package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import java.util.function.IntFunction;
import java.util.function.Predicate;
import org.slf4j.Logger;

/**
 * Whether a relay publishes more shards of the topic than this consumer declares: a topic's shard count is
 * declared by every outbox, relay and consumer on its own, and entries on a shard the consumer does not declare are
 * never read. Shards are numbered from 0, so the key of the first shard past the declared ones tells. Looked at
 * when the consumer starts and then on its housekeeping; what it finds makes the consumer's health {@code DOWN},
 * and is logged once at ERROR.
 *
 * <p>Thread-safe: the finding is volatile, and the checks do not overlap (start, then one housekeeping thread).
 */
final class ShardCountCheck {

  private final ConsumerConfig config;
  private final IntFunction<String> keyOfShard;
  private final Predicate<String> exists;
  private final Logger log;
  private final String label;
  private volatile String finding;

  ShardCountCheck(ConsumerConfig config, IntFunction<String> keyOfShard, Predicate<String> exists, Logger log,
      String label) {
    this.config = config;
    this.keyOfShard = keyOfShard;
    this.exists = exists;
    this.log = log;
    this.label = label;
  }

  /** What the last look found, as the health reason's text, or null. */
  String finding() {
    return finding;
  }

  /** Looks now; a Redis failure leaves the last finding in place, for the next look. */
  void check() {
    int declared = config.topic().shards();
    String key = keyOfShard.apply(declared);
    String found = !exists.test(key) ? null
        : "topic '" + config.topic().name() + "' has a key for shard " + declared + " (" + key + ") that this"
            + " consumer never reads: it declares " + declared + " shard(s) (0.." + (declared - 1) + "), fewer than"
            + " the relay that publishes it; every outbox, relay and consumer of a topic must declare the same shard"
            + " count (TopicConfig.withShards)";
    if (found != null && !found.equals(finding)) {
      log.error("{} '{}': {}", label, config.group(), found);
    } else if (found == null && finding != null) {
      log.info("{} '{}': it declares every shard of topic '{}' again", label, config.group(),
          config.topic().name());
    }
    finding = found;
  }
}
