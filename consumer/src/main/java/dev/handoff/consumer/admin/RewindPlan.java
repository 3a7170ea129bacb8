package dev.handoff.consumer.admin;

import java.util.List;
import java.util.stream.Collectors;

/**
 * What {@link StreamAdmin#rewind} did (or, for a dry run, would do), per shard of the topic.
 *
 * @param topic the topic
 * @param group the consumer group
 * @param target where the group was set back to
 * @param dryRun true when nothing was changed
 * @param shards each shard the rewind looked at, lowest first
 */
public record RewindPlan(String topic, String group, RewindTarget target, boolean dryRun, List<Shard> shards) {

  public RewindPlan {
    shards = List.copyOf(shards);
  }

  /**
   * One shard's rewind.
   *
   * @param shard the shard
   * @param streamKey its stream
   * @param lastDeliveredBefore the group's last-delivered ID before the rewind
   * @param setTo the last-delivered ID set (or to be set, for a dry run); null when the shard is left as it is,
   *     because the group has not read up to the target there
   * @param comeAgain the entries that come again: those the stream retains from the target to
   *     {@code lastDeliveredBefore}
   * @param exact false when counting stopped at the admin's count limit: at least {@code comeAgain} come again
   * @param pending the group's pending entries there, which stay pending (a rewind does not touch them)
   */
  public record Shard(int shard, String streamKey, String lastDeliveredBefore, String setTo, long comeAgain,
      boolean exact, long pending) {

    /** Whether the rewind moves (or would move) this shard's group. */
    public boolean changed() {
      return setTo != null;
    }

    @Override
    public String toString() {
      if (!changed()) {
        return "shard " + shard + ": not read up to the target (last delivered " + lastDeliveredBefore
            + "), left as it is";
      }
      return "shard " + shard + ": " + (exact ? "" : "at least ") + comeAgain + " from " + lastDeliveredBefore
          + " back to " + setTo;
    }
  }

  /** The entries that come again on all shards (a lower bound unless {@link #exact()}). */
  public long comeAgain() {
    return shards.stream().mapToLong(Shard::comeAgain).sum();
  }

  /** Whether every shard's count is exact. */
  public boolean exact() {
    return shards.stream().allMatch(Shard::exact);
  }

  /** One line: how many entries come again, per shard. */
  @Override
  public String toString() {
    long pending = shards.stream().mapToLong(Shard::pending).sum();
    return "rewind of group '" + group + "' on topic '" + topic + "' to " + target + (dryRun ? " (dry run)" : "")
        + ": " + (exact() ? "" : "at least ") + comeAgain() + " entries " + (dryRun ? "would come" : "will come")
        + " again (" + shards.stream().map(Shard::toString).collect(Collectors.joining("; ")) + "); " + pending
        + " pending entries stay pending";
  }
}
