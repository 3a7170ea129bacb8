package dev.handoff.core;

import java.util.List;
import java.util.Objects;

/**
 * What a relay or a consumer says of its own health, for a readiness or liveness probe: {@link Status#UP},
 * {@link Status#DEGRADED} with the reasons, or {@link Status#DOWN} with the reasons. Built from state the component
 * already tracks (its threads, its last cycle or step, its pauses and lost leases), so asking is cheap; see
 * {@code Relay.health()} and {@code HandoffConsumer.health()} for what each reports. Immutable.
 *
 * @param status the overall status: DOWN if any reason says so, else DEGRADED if there is a reason, else UP
 * @param reasons why it is not UP, in no particular order of importance; empty when UP
 */
public record Health(Status status, List<Reason> reasons) {

  /** The overall status. */
  public enum Status {
    /** Working as configured. */
    UP,
    /** Running, but something is wrong (a dependency unreachable, a thread replaced, a backlog too old). */
    DEGRADED,
    /** Not working: not started, closed, or every worker dead. */
    DOWN
  }

  /**
   * One reason.
   *
   * @param code a short stable code, such as {@code redis-unreachable}; the codes are listed in
   *     {@code docs/operations.md}
   * @param message one line for a human, naming the thread, shard or worker
   */
  public record Reason(String code, String message) {

    public Reason {
      Objects.requireNonNull(code, "code");
      Objects.requireNonNull(message, "message");
    }
  }

  /** Up, no reasons. */
  public static final Health UP = new Health(Status.UP, List.of());

  public Health {
    Objects.requireNonNull(status, "status");
    reasons = List.copyOf(reasons);
    if (status == Status.UP && !reasons.isEmpty()) {
      throw new IllegalArgumentException("an UP health has no reasons: " + reasons);
    }
    if (status != Status.UP && reasons.isEmpty()) {
      throw new IllegalArgumentException("a " + status + " health needs a reason");
    }
  }

  /** UP when {@code degraded} is empty, else DEGRADED with them. */
  public static Health of(List<Reason> degraded) {
    return degraded.isEmpty() ? UP : new Health(Status.DEGRADED, degraded);
  }

  /** DOWN for {@code code}: {@code message}. */
  public static Health down(String code, String message) {
    return new Health(Status.DOWN, List.of(new Reason(code, message)));
  }

  /** Whether a reason with {@code code} is present. */
  public boolean has(String code) {
    return reasons.stream().anyMatch(r -> r.code().equals(code));
  }
}
