package dev.handoff.consumer.status;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A snapshot of one topic's lists and the consumers of one group. The numbers answer different questions and are
 * not folded together: <b>outbox backlog</b> is work committed and not pushed yet (held back by the relay, for
 * instance at the capacity), <b>waiting</b> is pushed and not taken, <b>in processing</b> is taken by a consumer and
 * not finished. The relay's capacity bounds waiting plus in processing.
 *
 * @param group the consumer group (the scope of the inbox)
 * @param topic the topic
 * @param shards one entry per shard
 * @param deadLetters dead letters of this group still in status {@code dead}
 * @param duplicatesSkipped duplicates this consumer instance skipped since it was built (not persisted)
 * @param paused this instance's workers paused by a failure of the environment, with their reasons (not persisted)
 */
public record ListStatus(String group, String topic, List<ShardStatus> shards, long deadLetters,
    long duplicatesSkipped, List<PausedWorker> paused) implements GroupStatus {

  public ListStatus {
    shards = List.copyOf(shards);
    paused = List.copyOf(paused);
  }

  /** Elements waiting in the lists. */
  public long waiting() {
    return shards.stream().mapToLong(ShardStatus::waiting).sum();
  }

  /** Elements in the consumers' processing lists. */
  public long inProcessing() {
    return shards.stream().mapToLong(ShardStatus::inProcessing).sum();
  }

  /** Unpublished outbox rows of the topic (-1 when the outbox could not be read). */
  public long outboxBacklog() {
    long sum = 0;
    for (ShardStatus s : shards) {
      if (s.outboxBacklog() < 0) {
        return -1;
      }
      sum += s.outboxBacklog();
    }
    return sum;
  }

  /** Nothing waiting, in processing or unpublished. */
  public boolean drained() {
    return waiting() == 0 && inProcessing() == 0 && outboxBacklog() == 0;
  }

  /**
   * One shard.
   *
   * @param listKey the list
   * @param capacity the relay's capacity for the shard (as the relay last wrote it), or -1 when unknown
   * @param waiting {@code LLEN} of the list
   * @param processing elements per processing list owner (consumer name), for every registered consumer
   * @param alive whether each registered consumer's heartbeat is live
   * @param oldestInProcessingId the lowest ID in any processing list, or {@code null}
   * @param oldestInProcessingAge how long ago that message was assigned its ID by the relay, or {@code null}
   * @param lastPushedId the relay's marker: the highest ID pushed, or {@code null}
   * @param outboxBacklog unpublished outbox rows of this shard, or -1 when the outbox could not be read
   */
  public record ShardStatus(String listKey, long capacity, long waiting, Map<String, Long> processing,
      Map<String, Boolean> alive, String oldestInProcessingId, Duration oldestInProcessingAge, String lastPushedId,
      long outboxBacklog) {

    public ShardStatus {
      processing = Map.copyOf(processing);
      alive = Map.copyOf(alive);
    }

    public long inProcessing() {
      return processing.values().stream().mapToLong(Long::longValue).sum();
    }
  }
}
