package dev.handoff.consumer;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Which outbox rows of a consumer's topic a {@link HandoffConsumer#replayFromOutbox replay from the outbox} runs
 * through the consumer. Every bound is optional and the bounds combine (a row must meet all of them):
 *
 * <ul>
 *   <li>append time: {@code created_at} in {@code [from, to)}, the producer transaction's start time (PostgreSQL's
 *       {@code now()}), which is at or before its commit;
 *   <li>outbox id: {@code id} in {@code [firstId, lastId]};
 *   <li>message IDs: one of a given set;
 *   <li>key: {@code message_key} equal to a given key.
 * </ul>
 *
 * <pre>{@code
 * OutboxRange.appendedSince(clock.instant().minus(Duration.ofHours(1)))   // the last hour
 * OutboxRange.all().withKey("pay-42")                                       // one payment's messages
 * OutboxRange.messageIds(ids)                                               // exactly these
 * }</pre>
 *
 * <p>Immutable and thread-safe; the {@code with...} methods return new ranges.
 */
public final class OutboxRange {

  private static final OutboxRange ALL = new OutboxRange(null, null, null, null, null, null);

  private final Instant from;
  private final Instant to;
  private final Long firstId;
  private final Long lastId;
  private final List<UUID> messageIds;
  private final String key;

  private OutboxRange(Instant from, Instant to, Long firstId, Long lastId, List<UUID> messageIds, String key) {
    if (from != null && to != null && !from.isBefore(to)) {
      throw new IllegalArgumentException("OutboxRange: 'from' must be before 'to', was from " + from + ", to " + to);
    }
    if (firstId != null && lastId != null && firstId > lastId) {
      throw new IllegalArgumentException("OutboxRange: 'firstId' must not be above 'lastId', was " + firstId
          + " > " + lastId);
    }
    this.from = from;
    this.to = to;
    this.firstId = firstId;
    this.lastId = lastId;
    this.messageIds = messageIds;
    this.key = key;
  }

  /** Every row of the topic that the outbox still holds. */
  public static OutboxRange all() {
    return ALL;
  }

  /** Rows appended at or after {@code from} and before {@code to}. */
  public static OutboxRange appendedBetween(Instant from, Instant to) {
    return ALL.withAppendedBetween(from, to);
  }

  /** Rows appended at or after {@code from}. */
  public static OutboxRange appendedSince(Instant from) {
    return new OutboxRange(Objects.requireNonNull(from, "from"), null, null, null, null, null);
  }

  /** Rows whose outbox id is between {@code firstId} and {@code lastId}, both included. */
  public static OutboxRange ids(long firstId, long lastId) {
    return ALL.withIds(firstId, lastId);
  }

  /** Exactly the rows of these message IDs (an ID the outbox does not hold is reported as missing). */
  public static OutboxRange messageIds(Collection<UUID> messageIds) {
    return ALL.withMessageIds(messageIds);
  }

  /** The rows of one ordering key. */
  public static OutboxRange key(String key) {
    return ALL.withKey(key);
  }

  /** This range, further limited to rows appended in {@code [from, to)}. */
  public OutboxRange withAppendedBetween(Instant from, Instant to) {
    return new OutboxRange(Objects.requireNonNull(from, "from"), Objects.requireNonNull(to, "to"), firstId, lastId,
        messageIds, key);
  }

  /** This range, further limited to outbox ids in {@code [firstId, lastId]}. */
  public OutboxRange withIds(long firstId, long lastId) {
    return new OutboxRange(from, to, firstId, lastId, messageIds, key);
  }

  /** This range, further limited to these message IDs. */
  public OutboxRange withMessageIds(Collection<UUID> messageIds) {
    Objects.requireNonNull(messageIds, "messageIds");
    Set<UUID> sorted = new TreeSet<>();
    for (UUID id : messageIds) {
      sorted.add(Objects.requireNonNull(id, "messageIds must not contain null"));
    }
    return new OutboxRange(from, to, firstId, lastId, List.copyOf(sorted), key);
  }

  /** This range, further limited to the rows of one ordering key. */
  public OutboxRange withKey(String key) {
    return new OutboxRange(from, to, firstId, lastId, messageIds, Objects.requireNonNull(key, "key"));
  }

  /** The earliest append time included, or {@code null}. */
  public Instant from() {
    return from;
  }

  /** The append time excluded from here on, or {@code null}. */
  public Instant to() {
    return to;
  }

  /** The lowest outbox id included, or {@code null}. */
  public Long firstId() {
    return firstId;
  }

  /** The highest outbox id included, or {@code null}. */
  public Long lastId() {
    return lastId;
  }

  /** The message IDs, sorted and distinct, or {@code null} when the range does not name them. */
  public List<UUID> messageIds() {
    return messageIds;
  }

  /** The ordering key, or {@code null}. */
  public String key() {
    return key;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxRange r && Objects.equals(from, r.from) && Objects.equals(to, r.to)
        && Objects.equals(firstId, r.firstId) && Objects.equals(lastId, r.lastId)
        && Objects.equals(messageIds, r.messageIds) && Objects.equals(key, r.key);
  }

  @Override
  public int hashCode() {
    return Objects.hash(from, to, firstId, lastId, messageIds, key);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("OutboxRange[");
    String sep = "";
    if (from != null || to != null) {
      b.append("appended ").append(from == null ? "-inf" : from).append(" .. ").append(to == null ? "+inf" : to);
      sep = ", ";
    }
    if (firstId != null) {
      b.append(sep).append("ids ").append(firstId).append("..").append(lastId);
      sep = ", ";
    }
    if (messageIds != null) {
      b.append(sep).append(messageIds.size()).append(" message IDs");
      sep = ", ";
    }
    if (key != null) {
      b.append(sep).append("key '").append(key).append("'");
      sep = ", ";
    }
    return b.append(sep.isEmpty() ? "all]" : "]").toString();
  }
}
