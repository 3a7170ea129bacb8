package dev.handoff.consumer.testkit;

import dev.handoff.consumer.ConsumerStatus;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.StreamConsumer;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Test helpers for code that consumes with a {@link StreamConsumer}. Every wait has a deadline and fails with an
 * {@link AssertionError} that shows the group's status; nothing here sleeps for correctness.
 *
 * <pre>{@code
 * ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));        // not started: polls until drained
 * ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(10)); // started: waits until drained
 * ConsumerTestKit.assertReplayChangesNothing(consumer);           // replays every retained entry
 * }</pre>
 *
 * <p>Thread-safe as far as the consumer is.
 */
public final class ConsumerTestKit {

  private static final long POLL_MILLIS = 20;

  private ConsumerTestKit() {}

  /**
   * Calls {@link StreamConsumer#pollOnce()} on a consumer that was not started until its group has no backlog
   * and nothing pending on any shard.
   *
   * @return the sum of the polls' results
   * @throws AssertionError if the group is not drained by {@code deadline}
   */
  public static PollResult drain(StreamConsumer consumer, Duration deadline) {
    long end = System.nanoTime() + deadline.toNanos();
    PollResult total = PollResult.EMPTY;
    while (true) {
      PollResult r = consumer.pollOnce();
      total = total.plus(r);
      if (r.isEmpty()) {
        ConsumerStatus status = consumer.status();
        if (status.drained()) {
          return total;
        }
        if (System.nanoTime() > end) {
          throw new AssertionError("consumer group '" + status.group() + "' not drained within " + deadline
              + ": backlog " + status.backlog() + ", pending " + status.pending() + "; " + status);
        }
        sleep(POLL_MILLIS);
      } else if (System.nanoTime() > end) {
        throw new AssertionError("consumer group '" + consumer.config().group() + "' still busy after "
            + deadline + "; last poll " + r);
      }
    }
  }

  /**
   * Waits until a started consumer's group has no backlog and nothing pending on any shard.
   *
   * @return the drained status
   * @throws AssertionError if that does not happen by {@code deadline}
   */
  public static ConsumerStatus awaitDrained(StreamConsumer consumer, Duration deadline) {
    long end = System.nanoTime() + deadline.toNanos();
    while (true) {
      ConsumerStatus status = consumer.status();
      if (status.drained()) {
        return status;
      }
      if (System.nanoTime() > end) {
        throw new AssertionError("consumer group '" + status.group() + "' not drained within " + deadline
            + ": backlog " + status.backlog() + ", pending " + status.pending() + "; " + status);
      }
      sleep(POLL_MILLIS);
    }
  }

  /**
   * Waits until {@code condition} holds.
   *
   * @throws AssertionError naming {@code what} if it does not by {@code deadline}
   */
  public static void await(String what, Duration deadline, BooleanSupplier condition) {
    long end = System.nanoTime() + deadline.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out after " + deadline + " waiting for: " + what);
      }
      sleep(POLL_MILLIS);
    }
  }

  /**
   * Replays every entry the topic's streams retain through the consumer's own path and asserts that none of
   * them ran a handler or failed: every one was a duplicate. Run it after the consumer drained.
   *
   * @return the replay's result
   * @throws AssertionError if a replayed message was handled (it had not been processed) or failed
   */
  public static PollResult assertReplayChangesNothing(StreamConsumer consumer) {
    PollResult r = consumer.replayRetained();
    if (r.handled() != 0 || r.failed() != 0) {
      throw new AssertionError("replaying the retained entries of consumer group '" + consumer.config().group()
          + "' changed something: " + r);
    }
    return r;
  }

  /** Replays chosen messages through the consumer's own path; see {@link StreamConsumer#replay(List)}. */
  public static PollResult replay(StreamConsumer consumer, List<InboundMessage> messages) {
    return consumer.replay(messages);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while waiting", e);
    }
  }
}
