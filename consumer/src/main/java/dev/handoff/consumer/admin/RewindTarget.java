package dev.handoff.consumer.admin;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * Where {@link StreamAdmin#rewind} sets a consumer group back to: the entries at or after this stream entry ID come
 * again. A time is the entry ID {@code <epoch ms>-0} of that instant; an ID is a position in time too, applied on
 * every shard of the topic (the relay gives every shard IDs from the same clock), unless {@link #onShard} names one
 * shard. Immutable and thread-safe.
 */
public final class RewindTarget {

  private static final Pattern ENTRY_ID = Pattern.compile("(\\d{1,19})(?:-(\\d{1,19}))?");

  private final long ms;
  private final long seq;
  private final Integer shard;
  private final String described;

  private RewindTarget(long ms, long seq, Integer shard, String described) {
    this.ms = ms;
    this.seq = seq;
    this.shard = shard;
    this.described = described;
  }

  /** Entries added at or after {@code instant} come again. */
  public static RewindTarget time(Instant instant) {
    Objects.requireNonNull(instant, "instant");
    if (instant.toEpochMilli() < 0) {
      throw new IllegalArgumentException("rewind time must not be before 1970, was " + instant);
    }
    return new RewindTarget(instant.toEpochMilli(), 0, null, instant.toString());
  }

  /**
   * Entries at or after the stream entry ID {@code id} ({@code ms-seq}, or {@code ms} for {@code ms-0}) come again.
   *
   * @throws IllegalArgumentException naming the ID if it is not a stream entry ID
   */
  public static RewindTarget entryId(String id) {
    var m = id == null ? null : ENTRY_ID.matcher(id);
    if (m == null || !m.matches()) {
      throw new IllegalArgumentException("rewind target '" + id + "' is not a stream entry ID (ms-seq)");
    }
    try {
      long ms = Long.parseLong(m.group(1));
      long seq = m.group(2) == null ? 0 : Long.parseLong(m.group(2));
      return new RewindTarget(ms, seq, null, ms + "-" + Long.toUnsignedString(seq));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("rewind target '" + id + "' is out of range for a stream entry ID", e);
    }
  }

  /**
   * Reads an ISO-8601 instant ({@code 2026-12-01T10:00:00Z}) as {@link #time}, anything else as {@link #entryId}.
   *
   * @throws IllegalArgumentException naming the text if it is neither
   */
  public static RewindTarget parse(String text) {
    if (text != null && text.contains("T")) {
      try {
        return time(Instant.parse(text));
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("rewind target '" + text + "' is not an ISO-8601 instant"
            + " (2026-12-01T10:00:00Z) nor a stream entry ID (ms-seq)", e);
      }
    }
    return entryId(text);
  }

  /** The same target on one shard only; the others are left as they are. */
  public RewindTarget onShard(int shard) {
    if (shard < 0) {
      throw new IllegalArgumentException("shard must be 0 or more, was " + shard);
    }
    return new RewindTarget(ms, seq, shard, described);
  }

  /** The first entry ID that comes again, {@code ms-seq}. */
  public String entryId() {
    return ms + "-" + Long.toUnsignedString(seq);
  }

  /**
   * The ID the group's last-delivered ID is set to, just below {@link #entryId()} so that the target entry itself
   * comes again: {@code ms-(seq-1)}, or for {@code ms-0} the ID {@code (ms-1)-9223372036854775807} ({@code 0-0}
   * for {@code 0-0}). The sequence stops at {@link Long#MAX_VALUE}, not at Redis' 2^64-1, so that clients that
   * read sequences as signed longs (Jedis among them) can still read the group; relays never assign such
   * sequences.
   */
  public String lastDeliveredId() {
    if (seq != 0) {
      return ms + "-" + Long.toUnsignedString(seq - 1);
    }
    return ms == 0 ? "0-0" : (ms - 1) + "-" + Long.MAX_VALUE;
  }

  /** The one shard this target applies to, or empty for every shard of the topic. */
  public OptionalInt shard() {
    return shard == null ? OptionalInt.empty() : OptionalInt.of(shard);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RewindTarget t && t.ms == ms && t.seq == seq && Objects.equals(t.shard, shard);
  }

  @Override
  public int hashCode() {
    return Objects.hash(ms, seq, shard);
  }

  /** As given (the instant or the ID), and the shard when one is named. */
  @Override
  public String toString() {
    return described + (shard == null ? "" : " on shard " + shard);
  }
}
