package dev.handoff.testkit;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.consumer.status.ListStatus;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * Test helpers for code that consumes with a {@link StreamConsumer} or a {@link ListConsumer}. Every wait has a
 * deadline and fails with an {@link AssertionError} that shows the group's status; nothing here sleeps for
 * correctness.
 *
 * <pre>{@code
 * ConsumerTestKit.drain(consumer, Duration.ofSeconds(10));                 // not started: polls until drained
 * ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(10));          // started: waits until drained
 * ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(10));   // started: waits for these messages
 * ConsumerTestKit.assertReplayChangesNothing(consumer);                    // replays every retained entry
 * ConsumerTestKit.assertReplayChangesNothing(consumer, OutboxRange.all()); // replays the outbox
 * DataSource appData = ConsumerTestKit.strict(dataSource);                 // give this to the handler's code
 * KillSwitch process = ConsumerTestKit.killSwitch();                       // a list consumer's faults(...), then
 * process.kill();                                                          // it is, to its peers, a dead process
 * }</pre>
 *
 * <p><b>Strict mode.</b> A handler must write through the connection it was given: a write through any other
 * connection commits on its own, apart from the inbox marker, and again on every redelivery. handoff cannot see
 * the application's other connections, so a test hands the code under test {@link #strict}'s data source instead
 * of its own. Then a handler that asks it for a connection gets an exception, and every wait and replay assertion
 * of this kit for that consumer group fails, naming the handler's message, even if the handler swallowed the
 * exception.
 *
 * <p>Thread-safe as far as the consumer is.
 */
public final class ConsumerTestKit {

  private static final long POLL_MILLIS = 20;

  private ConsumerTestKit() {}

  /**
   * The application's data source in strict mode: it lends connections as {@code applicationDataSource} does,
   * except to code running inside a handoff handler on the same thread. There it throws a
   * {@link java.sql.SQLException},
   * and records the refusal: the next wait ({@link #drain}, {@link #awaitDrained}, {@link #awaitProcessed}) or
   * replay assertion of this kit for that group fails with it. A handler that hands work to another thread, which
   * then borrows, is not seen. Thread-safe.
   */
  public static DataSource strict(DataSource applicationDataSource) {
    return new StrictDataSource(applicationDataSource);
  }

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
      StrictDataSource.failIfRefused(consumer.config().group());
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
    return awaitDrained(consumer.config().group(), consumer::status, ConsumerStatus::drained,
        status -> "consumer group '" + status.group() + "' not drained within " + deadline + ": backlog "
            + status.backlog() + ", pending " + status.pending() + "; " + status, deadline);
  }

  /**
   * Waits until a started list consumer's group has nothing waiting in its lists, nothing in processing, and no
   * unpublished outbox backlog.
   *
   * @return the drained status
   * @throws AssertionError if that does not happen by {@code deadline}
   */
  public static ListStatus awaitDrained(ListConsumer consumer, Duration deadline) {
    return awaitDrained(consumer.config().group(), consumer::status, ListStatus::drained,
        status -> "list consumer group '" + status.group() + "' not drained within " + deadline + ": waiting "
            + status.waiting() + ", in processing " + status.inProcessing() + ", outbox backlog "
            + status.outboxBacklog() + "; " + status, deadline);
  }

  /**
   * Waits until the group of a started consumer has processed every one of {@code messageIds} (an inbox marker of
   * outcome processed for each).
   *
   * @throws AssertionError at the deadline, or as soon as one of them was dead-lettered, naming the messages not
   *     processed and the group's status
   */
  public static void awaitProcessed(HandoffConsumer consumer, Collection<UUID> messageIds, Duration deadline) {
    awaitProcessed(consumer.config().group(), messageIds, consumer::processed, consumer::deadLetters,
        () -> consumer.status().toString(), deadline);
  }

  /**
   * Replays {@code range} of the outbox through the consumer's own path (see
   * {@link HandoffConsumer#replayFromOutbox}) and asserts that it changed nothing: every row was a duplicate, none
   * was handled or failed, and the whole range was there to check (nothing purged, missing or still unpublished).
   * Unlike {@link #assertReplayChangesNothing(StreamConsumer)} it does not depend on what the streams retain.
   *
   * @return the replay's result
   * @throws AssertionError if a message was handled or failed, or part of the range could not be replayed
   */
  public static ReplayResult assertReplayChangesNothing(HandoffConsumer consumer, OutboxRange range) {
    return assertUnchanged(consumer.config().group(), range, consumer.replayFromOutbox(range));
  }

  private static ReplayResult assertUnchanged(String group, OutboxRange range, ReplayResult r) {
    StrictDataSource.failIfRefused(group);
    if (r.handled() != 0 || r.failed() != 0) {
      throw new AssertionError("replaying " + range + " of the outbox through consumer group '" + group
          + "' changed something: " + r);
    }
    if (!r.complete()) {
      throw new AssertionError("replaying " + range + " of the outbox through consumer group '" + group
          + "' could not check the whole range: " + r);
    }
    return r;
  }

  private static <S> S awaitDrained(String group, Supplier<S> status, java.util.function.Predicate<S> drained,
      Function<S, String> describe, Duration deadline) {
    long end = System.nanoTime() + deadline.toNanos();
    while (true) {
      StrictDataSource.failIfRefused(group);
      S s = status.get();
      if (drained.test(s)) {
        return s;
      }
      if (System.nanoTime() > end) {
        throw new AssertionError(describe.apply(s));
      }
      sleep(POLL_MILLIS);
    }
  }

  private static void awaitProcessed(String group, Collection<UUID> messageIds,
      Function<Collection<UUID>, Set<UUID>> processed, IntFunction<List<DeadLetter>> deadLetters,
      Supplier<String> status, Duration deadline) {
    long end = System.nanoTime() + deadline.toNanos();
    Set<UUID> left = new LinkedHashSet<>(messageIds);
    while (true) {
      StrictDataSource.failIfRefused(group);
      left.removeAll(processed.apply(left));
      if (left.isEmpty()) {
        return;
      }
      List<UUID> dead = deadLetters.apply(1_000).stream().map(DeadLetter::messageId).filter(left::contains)
          .toList();
      if (!dead.isEmpty() || System.nanoTime() > end) {
        throw new AssertionError("consumer group '" + group + "': " + left.size() + " of " + messageIds.size()
            + " message(s) not processed" + (dead.isEmpty() ? " within " + deadline : "") + " (first: "
            + left.iterator().next() + ")" + (dead.isEmpty() ? "" : "; dead-lettered: " + dead) + "; status "
            + status.get());
      }
      sleep(POLL_MILLIS);
    }
  }

  /**
   * A fault hook that can kill the {@link ListConsumer} built with it as its process would be killed: give it to the
   * builder's {@code faults(...)}, then call {@link KillSwitch#kill()}. Until then it passes every point to
   * {@code faults}. See {@link KillSwitch} for what a killed consumer does and does not do.
   */
  public static KillSwitch killSwitch(ConsumerFaults faults) {
    return new KillSwitch(faults);
  }

  /** {@link #killSwitch(ConsumerFaults)} with no faults of the test's own before the kill. */
  public static KillSwitch killSwitch() {
    return new KillSwitch(ConsumerFaults.NONE);
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
    StrictDataSource.failIfRefused(consumer.config().group());
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
