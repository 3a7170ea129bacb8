package dev.handoff.consumer.admin;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.HandoffConsumer;
import dev.handoff.consumer.internal.DefaultDeadLetterAdmin;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.Statements;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Dead letters for an operator's tool, without a handler and without Redis: list and show them, request their
 * retry, purge them. It never runs a handler: {@link #requestRetry} only records the request in the database, and
 * the running consumers of the group pick it up in their housekeeping (every
 * {@link ConsumerBuilder#retryRequestInterval}) and run it through their own handler, the inbox marker turning from
 * dead to processed in the handler's transaction, as {@link HandoffConsumer#retry(long)} does. Nothing is written
 * to Redis, so every outbox row still has exactly one stream entry.
 *
 * <p>A {@code group} of {@code null} means every group. Runs under the operator role of
 * {@code HandoffGrants} (handoff-migrations).
 *
 * <pre>{@code
 * DeadLetterAdmin admin = DeadLetterAdmin.builder(dataSource).schema("handoff").build();
 * RetryRequestResult r = admin.requestRetry("billing", DeadLetterSelection.deadSince(Instant.now().minus(2, HOURS)));
 * }</pre>
 *
 * <p>Thread-safe; it keeps no state between calls and holds a connection only during one.
 */
public interface DeadLetterAdmin {

  /** A builder of an admin on {@code dataSource}'s database. */
  static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /**
   * The dead letters of {@code group} (or every group) that {@code selection} matches, newest first, at most
   * {@code limit}, in every state.
   *
   * @throws IllegalArgumentException if {@code limit} is not between 1 and 100,000
   * @throws ConsumerException if the database fails
   */
  List<DeadLetter> list(String group, DeadLetterSelection selection, int limit);

  /** Dead letter {@code id}, of whichever group, or empty. @throws ConsumerException if the database fails */
  Optional<DeadLetter> show(long id);

  /**
   * Requests a retry of the dead letters of {@code group} (or every group) that {@code selection} matches and that
   * are still dead (dead, or a requested retry that failed). Already retried ones are left alone; one already
   * requested keeps its request. Undecodable or lost entries cannot be retried: by id that is refused, otherwise
   * they are counted as {@link RetryRequestResult#notRetryable()} and left as they are.
   *
   * @throws ConsumerException if an id selection names no dead letter (of the group), one that was already retried
   *     or one that cannot be retried, or if the database fails; then nothing is requested
   */
  RetryRequestResult requestRetry(String group, DeadLetterSelection selection);

  /**
   * Deletes the dead-letter rows of {@code group} (or every group) that {@code selection} matches, in every state.
   * The inbox markers stay: a dead message's marker says {@code dead}, so a redelivery or a replay of it is still a
   * duplicate and never runs the handler on a message the operator chose to drop. A purged dead letter can no
   * longer be retried.
   *
   * @return how many rows were deleted
   * @throws ConsumerException if an id selection names no dead letter (of the group), or if the database fails
   */
  long purge(String group, DeadLetterSelection selection);

  /**
   * Requests a replay of what was appended to {@code topic} from {@code from} (to {@code to}, or to now when null)
   * through consumer group {@code group}. It runs no handler here: the group's running consumers of that topic pick
   * the request up within their retry-request interval (5 s by default) and run the range through their handler, as
   * {@link HandoffConsumer#replayFromOutbox} does: what the group's inbox already has is skipped, the rest is handled
   * once, nothing is dead-lettered and nothing is written to Redis. A consumer that dies while it runs one leaves it
   * open for another, which is harmless for the same reason.
   *
   * @return the request's id, for {@link #replayRequest}
   */
  long requestReplay(String group, String topic, Instant from, Instant to);

  /**
   * Answers a shard of an ordered group that stopped for an operator ({@code WhenExhausted.STOP_SHARD}): its owner
   * tries the message that stopped it again ({@code skip} false; should it fail again, the shard stops again), or
   * dead-letters it and goes on with the shard's next message ({@code skip} true). The owner carries the answer out
   * within about a second; the shard's status shows it as {@code resumeRequested} until then.
   *
   * @return whether the shard was stopped; false records nothing
   */
  boolean resumeShard(String group, String topic, int shard, boolean skip);

  /** Request {@code id} of {@link #requestReplay}, with its outcome once a consumer has run it. */
  Optional<ReplayRequest> replayRequest(long id);

  /**
   * A requested replay.
   *
   * @param from the start of the range (rows appended at or after it)
   * @param to its end, or null for "until the request ran"
   * @param finishedAt when a consumer finished it, or null while it is open
   * @param handled rows whose handler ran and committed
   * @param duplicates rows the group had already processed
   * @param failed rows whose handler failed (reported, not dead-lettered)
   */
  record ReplayRequest(long id, String group, String topic, Instant from, Instant to, Instant finishedAt,
      long handled, long duplicates, long failed) {}

  /** Settings of a {@link DeadLetterAdmin}. Not thread-safe; the built admin is. */
  final class Builder {

    private final DataSource dataSource;
    private String schema = SchemaNames.DEFAULT_SCHEMA;

    private Builder(DataSource dataSource) {
      // Behind a pooler in transaction mode nothing of handoff's may outlive a transaction (see Statements).
      this.dataSource = Statements.sessionFree(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /** The schema holding handoff's tables. Defaults to {@code handoff}. */
    public Builder schema(String schema) {
      this.schema = schema;
      return this;
    }

    /** @throws IllegalArgumentException if the schema is not a valid name */
    public DeadLetterAdmin build() {
      SchemaNames.requireValid(schema);
      return new DefaultDeadLetterAdmin(dataSource, schema);
    }
  }
}
