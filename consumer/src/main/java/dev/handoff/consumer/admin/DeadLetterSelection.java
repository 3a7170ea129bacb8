package dev.handoff.consumer.admin;

import java.time.Instant;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Which dead letters a {@link DeadLetterAdmin} call is about: one by its id, every one, or those dead-lettered at or
 * after a time. The group is passed beside it. Immutable and thread-safe.
 */
public final class DeadLetterSelection {

  private static final DeadLetterSelection ALL = new DeadLetterSelection(null, null);

  private final Long id;
  private final Instant deadSince;

  private DeadLetterSelection(Long id, Instant deadSince) {
    this.id = id;
    this.deadSince = deadSince;
  }

  /**
   * Dead letter {@code id} alone.
   *
   * @throws IllegalArgumentException if {@code id} is not positive
   */
  public static DeadLetterSelection id(long id) {
    if (id <= 0) {
      throw new IllegalArgumentException("dead letter id must be positive, was " + id);
    }
    return new DeadLetterSelection(id, null);
  }

  /** Every dead letter. */
  public static DeadLetterSelection all() {
    return ALL;
  }

  /** The dead letters dead-lettered at or after {@code since}. */
  public static DeadLetterSelection deadSince(Instant since) {
    return new DeadLetterSelection(null, Objects.requireNonNull(since, "since"));
  }

  /** The id of a selection of one, else empty. */
  public OptionalLong singleId() {
    return id == null ? OptionalLong.empty() : OptionalLong.of(id);
  }

  /** The lower bound of {@link #deadSince}, or {@code null}. */
  public Instant since() {
    return deadSince;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DeadLetterSelection s && Objects.equals(id, s.id) && Objects.equals(deadSince, s.deadSince);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, deadSince);
  }

  /** {@code id 42}, {@code all}, or {@code dead since 2026-01-01T00:00:00Z}. */
  @Override
  public String toString() {
    return id != null ? "id " + id : deadSince != null ? "dead since " + deadSince : "all";
  }
}
