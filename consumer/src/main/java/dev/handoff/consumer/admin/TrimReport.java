package dev.handoff.consumer.admin;

import java.util.List;
import java.util.stream.Collectors;

/**
 * What {@link StreamAdmin#trim} found and removed (or, for a dry run, would remove), per shard of the topic.
 *
 * @param topic the topic
 * @param dryRun true when nothing was removed
 * @param shards each shard, lowest first
 */
public record TrimReport(String topic, boolean dryRun, List<Shard> shards) {

  public TrimReport {
    shards = List.copyOf(shards);
  }

  /**
   * What one group still holds on a shard, as read before the trim.
   *
   * @param name the group
   * @param lastDelivered its last-delivered ID
   * @param backlog entries after {@code lastDelivered}, not yet delivered
   * @param backlogExact false when counting stopped at the admin's count limit
   * @param pending entries delivered and not acknowledged
   * @param oldestPending the oldest of them, or null
   */
  public record Group(String name, String lastDelivered, long backlog, boolean backlogExact, long pending,
      String oldestPending) {

    @Override
    public String toString() {
      return name + ": last delivered " + lastDelivered + ", backlog " + (backlogExact ? "" : "at least ")
          + backlog + ", pending " + pending + (oldestPending == null ? "" : " (oldest " + oldestPending + ")");
    }
  }

  /**
   * One shard's trim.
   *
   * @param shard the shard
   * @param streamKey its stream
   * @param exists false when the stream does not exist (nothing to trim)
   * @param lengthBefore the stream's length before the trim
   * @param lengthAfter its length after (the same for a dry run)
   * @param trimPoint what every group finished: entries below it were (or would be) removed; null when the stream
   *     has no group (nobody finished anything, so nothing is trimmed) or does not exist
   * @param holder the group whose unfinished entries set the trim point, or null
   * @param removed entries removed; for a dry run, entries the stream holds below the trim point
   * @param removedExact false when a dry run's count stopped at the admin's count limit
   * @param groups what each group still holds, by name
   */
  public record Shard(int shard, String streamKey, boolean exists, long lengthBefore, long lengthAfter,
      String trimPoint, String holder, long removed, boolean removedExact, List<Group> groups) {

    public Shard {
      groups = List.copyOf(groups);
    }

    @Override
    public String toString() {
      if (!exists) {
        return "shard " + shard + ": no stream " + streamKey;
      }
      if (trimPoint == null) {
        return "shard " + shard + ": " + lengthBefore + " entries, no group: nothing trimmed";
      }
      return "shard " + shard + ": " + (removedExact ? "" : "at least ") + removed + " of " + lengthBefore
          + " below " + trimPoint + " (held by " + holder + ")";
    }
  }

  /** Entries removed (or removable, for a dry run) on all shards. */
  public long removed() {
    return shards.stream().mapToLong(Shard::removed).sum();
  }

  /** One line: how many entries were (or would be) removed, on how many shards. */
  public String summary() {
    return "trim of topic '" + topic + "'" + (dryRun ? " (dry run)" : "") + ": " + removed() + " entries "
        + (dryRun ? "would be removed" : "removed") + " on " + shards.size() + " shard(s)";
  }

  /** {@link #summary()} and each shard's line. */
  @Override
  public String toString() {
    return summary() + " (" + shards.stream().map(Shard::toString).collect(Collectors.joining("; ")) + ")";
  }
}
