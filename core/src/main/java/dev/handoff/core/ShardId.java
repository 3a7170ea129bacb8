package dev.handoff.core;

/**
 * One shard of a topic: one Redis stream, written by exactly one relay at a time.
 *
 * @param topic the topic
 * @param shard the shard number, from 0 to the topic's shard count minus one
 */
public record ShardId(String topic, int shard) implements Comparable<ShardId> {

  @Override
  public int compareTo(ShardId o) {
    int c = topic.compareTo(o.topic);
    return c != 0 ? c : Integer.compare(shard, o.shard);
  }

  @Override
  public String toString() {
    return topic + ":" + shard;
  }
}
