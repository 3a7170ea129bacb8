package dev.handoff.core.internal;

/** A Redis stream entry ID, {@code ms-seq}, ordered as Redis orders them. */
public record StreamId(long ms, long seq) implements Comparable<StreamId> {

  public static final StreamId ZERO = new StreamId(0, 0);

  public static StreamId parse(String id) {
    int dash = id.indexOf('-');
    if (dash < 0) {
      return new StreamId(Long.parseLong(id), 0);
    }
    return new StreamId(Long.parseLong(id.substring(0, dash)), Long.parseLong(id.substring(dash + 1)));
  }

  public static StreamId max(StreamId a, StreamId b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  public static StreamId min(StreamId a, StreamId b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  @Override
  public int compareTo(StreamId o) {
    int c = Long.compareUnsigned(ms, o.ms);
    return c != 0 ? c : Long.compareUnsigned(seq, o.seq);
  }

  @Override
  public String toString() {
    return ms + "-" + seq;
  }
}
