package dev.handoff.consumer.internal;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ConsumerTransactions;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.status.DeadLetter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.List;
import java.util.function.LongPredicate;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A group's dead letters, for both transports: list, count, and retry one or all. A retry runs the handler in a
 * transaction of its own, fenced by the inbox marker like a delivery, so that a retry and a redelivery of the same
 * message never both commit an effect.
 *
 * <p>Thread-safe: it keeps no state between calls.
 */
final class DeadLetterService {

  private static final Logger log = LoggerFactory.getLogger(DeadLetterService.class);

  private final DataSource dataSource;
  private final ConsumerTransactions hosted;
  private final MessageHandler handler;
  private final BatchMessageHandler batchHandler;
  private final InboxQueries inbox;
  private final DeadLetterQueries deadLetters;
  private final String group;
  private final String schema;

  DeadLetterService(ConsumerConfig config, Collaborators collaborators, DataSource dataSource,
      ConsumerTransactions hosted) {
    this.dataSource = dataSource;
    this.hosted = hosted;
    this.handler = collaborators.handler();
    this.batchHandler = collaborators.batchHandler();
    this.inbox = new InboxQueries(config.schema());
    this.deadLetters = new DeadLetterQueries(config.schema());
    this.group = config.group();
    this.schema = config.schema();
  }

  /** The group's dead letters, newest first, at most {@code limit}. */
  List<DeadLetter> list(int limit) {
    try (Connection c = dataSource.getConnection()) {
      return deadLetters.list(c, group, limit);
    } catch (SQLException e) {
      throw new ConsumerException("could not list the dead letters of consumer group '" + group + "'", e);
    }
  }

  /** How many of the group's dead letters are still dead, on the caller's connection. */
  long countDead(Connection c) throws SQLException {
    return deadLetters.countDead(c, group);
  }

  /**
   * Retries every retryable dead letter of the group, oldest first, each in its own transaction, through
   * {@code retry} (the consumer's own, which reports to its listener). Failures are logged and left dead.
   *
   * @return how many handlers ran and committed
   */
  int retryAll(LongPredicate retry) {
    List<Long> ids;
    try (Connection c = dataSource.getConnection()) {
      ids = deadLetters.retryableIds(c, group);
    } catch (SQLException e) {
      throw new ConsumerException("could not list the dead letters of consumer group '" + group + "'", e);
    }
    int done = 0;
    for (long id : ids) {
      try {
        if (retry.test(id)) {
          done++;
        }
      } catch (ConsumerException e) {
        log.warn("Consumer group '{}': retry of dead letter {} failed: {}", group, id, e.toString());
      }
    }
    return done;
  }

  /**
   * Re-runs the handler on a stored dead letter; see {@link dev.handoff.consumer.HandoffConsumer#retry(long)}.
   *
   * @return the message if the handler ran and committed, {@code null} if there was nothing to do
   */
  InboundMessage retry(long deadLetterId) {
    try (BatchTransactions txs = BatchTransactions.open(dataSource, hosted)) {
      Connection c = txs.begin();
      try {
        DeadLetterQueries.Stored stored = deadLetters.lock(c, group, deadLetterId);
        if (stored == null) {
          throw new ConsumerException("no dead letter " + deadLetterId + " in consumer group '" + group + "'");
        }
        if (!"dead".equals(stored.status())) {
          txs.rollback();
          return null;
        }
        HandlerTransaction ran = runLocked(c, stored);
        commit(txs, ran, stored);
        return ran != null ? stored.message() : null;
      } catch (RuntimeException | SQLException e) {
        txs.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new ConsumerException("retry of dead letter " + deadLetterId + " in consumer group '" + group
          + "' failed in the database", e);
    }
  }

  /**
   * What one requested retry came to.
   *
   * @param id the dead letter, or 0 when no request was open
   * @param message the message, when the handler ran and committed
   * @param failure the handler's failure, recorded on the dead letter, when it failed again
   */
  record Requested(long id, InboundMessage message, ConsumerException failure) {

    static final Requested NONE = new Requested(0, null, null);
  }

  /**
   * Runs the group's oldest requested retry that no other consumer is running, in one transaction holding its row
   * lock throughout: marker dead -> processed and the handler, then the row marked retried and its request cleared.
   * If the handler fails, that much rolls back (to a savepoint) and the same transaction clears the request and
   * records the failure, so that the message stays dead and runs once per request, never in a loop. Where a
   * savepoint cannot undo the handler (the handler ended the transaction, or the application runs the transactions
   * and may hold state outside the database), all of it rolls back and the failure is recorded in a transaction of
   * its own, on a row still dead.
   *
   * @return {@link Requested#NONE} when no request was open
   * @throws PostponedException if the handler's failure is the environment's or a conflict ({@link Blame}, such as
   *     a {@link dev.handoff.consumer.RetryLaterException} or a revoked grant): all rolls back, the request stays
   * @throws ConsumerException if the database failed: all rolls back, the request stays
   */
  Requested runNextRequested() {
    return runNextRequested(null, null);
  }

  /**
   * {@link #runNextRequested()} for one stream's dead letters, through its shard's owner: {@code hold} checks the
   * shard's lease in the retry's transaction, last before each commit, so that the retry lands between two of the
   * shard's batches and a former owner's retry cannot commit.
   *
   * @param streamKey the stream whose requests are run, or null for any
   * @param hold the lease check of that stream's shard, or null
   */
  Requested runNextRequested(String streamKey, OrderedSettling.Fence hold) {
    try (BatchTransactions txs = BatchTransactions.open(dataSource, hosted)) {
      Connection c = txs.begin();
      DeadLetterQueries.Stored stored = deadLetters.claimRequested(c, group, streamKey);
      if (stored == null) {
        txs.rollback();
        return Requested.NONE;
      }
      Savepoint beforeHandler = txs.savepointsUndoHandlers() ? c.setSavepoint() : null;
      try {
        HandlerTransaction ran = runLocked(c, stored);
        requireLease(txs, c, hold);
        commit(txs, ran, stored);
        return new Requested(stored.id(), ran != null ? stored.message() : null, null);
      } catch (HandlerFailedException e) {
        boolean ended = HandlerTransaction.endedBy(e.getCause());
        if (!ended && Blame.of(e.getCause()) != Blame.MESSAGE) {
          throw new PostponedException("requested retry of dead letter " + stored.id() + " of consumer group '"
              + group + "' postponed, the failure is not the message's: " + e.getCause(), e.getCause());
        }
        Connection recordOn = c;
        if (ended || beforeHandler == null) {
          txs.rollback();
          recordOn = txs.begin();
        } else {
          c.rollback(beforeHandler);
        }
        deadLetters.recordRetryFailure(recordOn, stored.id(), BatchSettler.describe(e.getCause()));
        requireLease(txs, recordOn, hold);
        txs.commit(null);
        return new Requested(stored.id(), null, e);
      }
    } catch (SQLException e) {
      throw new ConsumerException("a requested dead-letter retry of consumer group '" + group
          + "' failed in the database", e);
    }
  }

  /** Rolls back and postpones the retry if the shard's lease is not this consumer's any more. */
  private void requireLease(BatchTransactions txs, Connection c, OrderedSettling.Fence hold) throws SQLException {
    if (hold != null && !hold.holds(c, null)) {
      txs.rollback();
      throw new PostponedException("a requested retry of consumer group '" + group + "' found that another"
          + " consumer took its shard; that consumer runs it", null);
    }
  }

  /**
   * The retry itself, on a locked dead letter: the marker is the fence here too: dead -> processed in the
   * transaction of the effect, or, if a delivery meanwhile processed the message, no second run. The row is then
   * marked retried (and any request cleared); the caller commits through the returned guard.
   *
   * @return the sealed transaction of the handler that ran, or null if the message was processed meanwhile
   * @throws HandlerFailedException if the handler threw; nothing of this call is to commit
   */
  private HandlerTransaction runLocked(Connection c, DeadLetterQueries.Stored stored) throws SQLException {
    InboundMessage m = stored.message();
    if (m == null) {
      throw new ConsumerException("dead letter " + stored.id() + " of consumer group '" + group
          + "' cannot be retried: its entry could not be decoded or was lost, so the message is not stored");
    }
    String streamId = m.delivery().streamId();
    boolean run = inbox.revive(c, group, m.messageId(), streamId)
        || !inbox.insert(c, group, List.of(m.messageId()), List.of(streamId), InboxQueries.PROCESSED).isEmpty();
    HandlerTransaction guard = null;
    if (run) {
      try {
        guard = HandlerTransaction.of(c, schema, group).seal();
        guard.run("retry of dead letter " + stored.id() + " (message " + m.messageId() + ")", tx -> {
          if (batchHandler != null) {
            batchHandler.handle(tx, List.of(m));
          } else {
            handler.handle(tx, m);
          }
        });
      } catch (Exception e) {
        throw handlerFailed(stored, e);
      }
    }
    deadLetters.markRetried(c, stored.id());
    return guard;
  }

  /** Commits a retry; a commit that finds the handler ended its transaction is the handler's failure. */
  private void commit(BatchTransactions txs, HandlerTransaction ran, DeadLetterQueries.Stored stored)
      throws SQLException {
    try {
      txs.commit(ran);
    } catch (SQLException e) {
      if (ran != null && HandlerTransaction.endedBy(e)) {
        throw handlerFailed(stored, e);
      }
      throw e;
    }
  }

  private HandlerFailedException handlerFailed(DeadLetterQueries.Stored stored, Exception cause) {
    return new HandlerFailedException("retry of dead letter " + stored.id() + " (message "
        + stored.message().messageId() + ") in consumer group '" + group + "' failed; it stays dead", cause);
  }

  /** A requested retry that must wait for the next turn: the environment failed, not the message. */
  static final class PostponedException extends ConsumerException {

    private static final long serialVersionUID = 1L;

    PostponedException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** The handler failed during a retry; the cause is the handler's exception. */
  static final class HandlerFailedException extends ConsumerException {

    private static final long serialVersionUID = 1L;

    HandlerFailedException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
