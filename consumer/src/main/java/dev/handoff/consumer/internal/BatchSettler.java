package dev.handoff.consumer.internal;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ConsumerTransactions;
import dev.handoff.consumer.FailureIsolation;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.internal.SettleAttempt.Abandoned;
import dev.handoff.consumer.internal.SettleAttempt.FencedOut;
import dev.handoff.consumer.internal.SettleAttempt.HandlerFailed;
import dev.handoff.consumer.internal.SettleAttempt.Unattributable;
import dev.handoff.consumer.internal.SettleAttempt.Unit;
import dev.handoff.consumer.internal.Settled.Dead;
import dev.handoff.consumer.internal.Settled.Failure;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles a batch of deliveries in the database: one transaction writes the inbox markers, runs the handlers of
 * the new messages, records dead letters and lost entries, and commits. The caller acknowledges what committed.
 *
 * <p><b>Failure isolation.</b> By default ({@link FailureIsolation#OPTIMISTIC_BATCH}) the batch runs without
 * savepoints. When a handler throws, the transaction is rolled back and run again without that message: the
 * exception names the culprit, so k failures cost k extra transactions, not a bisection. When a failure cannot be
 * pinned on one message (the commit fails, or a handler swallowed an SQL error and left the transaction aborted
 * so that the next statement fails), the batch is split in halves and each half retried, down to single messages.
 * The alternative, a savepoint per message, costs two extra round trips (SAVEPOINT, RELEASE) per message on the
 * fast path. Measured with {@code ConsumerBenchmark} (batches of 100, one-insert handler, embedded PostgreSQL 17,
 * one worker, four runs of 3 to 5 rounds): optimistic 6,800 to 12,000 msg/s against savepoints 2,850 to 4,200
 * msg/s, a steady 2.4x to 2.9x. Failures are rare and cheap to redo, the fast path is every message, so the
 * optimistic batch is the default; savepoints remain available for handlers whose non-database side effects must
 * not repeat when a sibling fails. A {@link BatchMessageHandler} call cannot name its culprit, so its failures are
 * always bisected.
 *
 * <p>This class sorts the batch, runs its units in turn and decides from how each {@link SettleAttempt} ended what to
 * try next: the same unit again (a conflict), the unit without its culprit, its halves, or nothing more (the
 * environment failed, or close gave up). Every delivery of the batch ends in exactly one list of {@link Settled}.
 *
 * <p>Thread-safe: it keeps no state between calls.
 */
final class BatchSettler {

  private static final Logger log = LoggerFactory.getLogger(BatchSettler.class);

  enum Mode {
    /** Entries delivered through the group: may dead-letter, will be acknowledged. */
    DELIVERY,
    /** Replayed messages: never dead-lettered, never acknowledged; failures are only reported. */
    REPLAY;

    /** Whether a failure of {@code d} now is its last: then it is dead-lettered rather than retried. */
    boolean isFinal(Delivery d, ConsumerConfig config) {
      return this == DELIVERY && d.deliveries >= config.retries().maxDeliveries();
    }
  }

  /** The environment failed (see {@link Blame#ENVIRONMENT}): nothing in the batch is the messages' fault. */
  private static final class EnvironmentFailed extends Exception {
    private static final long serialVersionUID = 1L;

    EnvironmentFailed(Throwable cause) {
      super(cause);
    }
  }

  private final ConsumerConfig config;
  private final DataSource dataSource;
  private final ConsumerTransactions hosted;
  /** Null unless ghosts are refused: then a message this database has no trace of is dead-lettered, not applied. */
  private final GhostCheck ghostCheck;
  private final VerdictWriter verdicts;
  private final SettleAttempt attempt;
  private final String group;

  /** How often a batch is run again at once after serialization failures or deadlocks, before it is paused. */
  static final int CONFLICT_RETRIES = 10;

  BatchSettler(ConsumerConfig config, Collaborators collaborators, DataSource dataSource, SettleOptions settling) {
    this.config = config;
    this.dataSource = dataSource;
    this.hosted = settling.transactions();
    this.ghostCheck = settling.refuseGhosts() ? new GhostCheck(config, dataSource) : null;
    InboxQueries inbox = new InboxQueries(config.schema());
    this.verdicts = new VerdictWriter(config, dataSource, inbox);
    this.attempt = new SettleAttempt(config, collaborators, inbox, verdicts);
    this.group = config.group();
  }

  Settled settle(List<Delivery> batch, Mode mode, ConsumerFaults hook) {
    return settle(batch, mode, hook, () -> false);
  }

  Settled settle(List<Delivery> batch, Mode mode, ConsumerFaults hook, BooleanSupplier abandon) {
    return settle(batch, mode, hook, abandon, null);
  }

  /**
   * Settles {@code batch}; with {@code ordered} (a group ordered per shard, the batch one shard's entries in stream
   * order), nothing after a failed message commits before it ({@link OrderedIsolation}) and every transaction is
   * fenced by the shard's lease.
   */
  Settled settle(List<Delivery> batch, Mode mode, ConsumerFaults hook, BooleanSupplier abandon,
      OrderedSettling ordered) {
    Settled out = new Settled();
    OrderedIsolation inOrder = ordered == null ? null : new OrderedIsolation(config, ordered, batch);
    List<Delivery> candidates = new ArrayList<>();
    List<Dead> dead = new ArrayList<>();
    List<Delivery> lost = new ArrayList<>();
    for (Delivery d : batch) {
      if (d.lost()) {
        lost.add(d);
      } else if (d.malformed != null) {
        if (mode == Mode.REPLAY) {
          out.failed.add(new Failure(d, d.malformed));
        } else {
          dead.add(new Dead(d, "malformed: field '" + d.malformed.field() + "': " + d.malformed.getMessage()));
        }
      } else if (ordered != null && d.id.equals(ordered.skipStreamId())) {
        dead.add(new Dead(d, "dead-lettered by an operator (handoff ordered resume --skip) after " + d.deliveries
            + " deliveries"));
      } else if (mode == Mode.DELIVERY && d.deliveries > config.retries().maxDeliveries()
          && (ordered == null || ordered.deadLetterExhausted())) {
        // The handler never got to fail (crashes, lost leases): the counter ran past the limit on its own.
        dead.add(new Dead(d, "gave up after " + d.deliveries + " deliveries without an outcome (maxDeliveries "
            + config.retries().maxDeliveries() + "); the consumer crashed or lost the entry each time"));
      } else {
        candidates.add(d);
      }
    }
    if (ghostCheck != null && !candidates.isEmpty()) {
      List<Dead> ghosts;
      try {
        ghosts = ghostCheck.find(candidates);
      } catch (SQLException | RuntimeException e) {
        out.databaseError = e;
        out.abandoned.addAll(candidates);
        dead.forEach(x -> out.abandoned.add(x.delivery()));
        out.abandoned.addAll(lost);
        return out;
      }
      for (Dead ghost : ghosts) {
        candidates.removeIf(d -> d == ghost.delivery());
        if (mode == Mode.REPLAY) {
          out.failed.add(new Failure(ghost.delivery(), new IllegalStateException(ghost.error())));
        } else {
          dead.add(ghost);
        }
      }
    }
    Map<Delivery, InboundMessage> recovered = lost.isEmpty() ? Map.of() : verdicts.recoverLost(lost);
    Deque<Unit> queue = new ArrayDeque<>();
    queue.add(new Unit(candidates, dead, lost));
    int conflicts = 0;
    try (BatchTransactions txs = BatchTransactions.open(dataSource, hosted)) {
      while (!queue.isEmpty()) {
        Unit u = queue.poll();
        if (u.isEmpty()) {
          continue;
        }
        try {
          out.transactions++;
          attempt.run(txs, u, mode, recovered, out, hook, abandon, ordered);
        } catch (HandlerFailed | Unattributable failure) {
          Blame blame = Blame.of(failure.getCause());
          if (blame == Blame.CONFLICT && conflicts++ < CONFLICT_RETRIES) {
            out.conflictsRetried++;
            queue.addFirst(u); // the same work again at once: a conflict says nothing about these messages
            continue;
          }
          if (blame != Blame.MESSAGE) {
            queue.addFirst(u);
            throw new EnvironmentFailed(failure.getCause());
          }
          if (inOrder != null) {
            inOrder.isolate(txs, u, failure, mode, out, queue);
          } else {
            isolate(txs, u, failure, mode, out, queue);
          }
        }
      }
    } catch (Abandoned e) {
      queue.addFirst(e.unit);
      abandonAll(queue, out);
    } catch (FencedOut e) {
      out.fencedOut = true;
      queue.addFirst(e.unit);
      abandonAll(queue, out);
    } catch (EnvironmentFailed | Unattributable | SQLException | RuntimeException e) {
      Throwable cause = e instanceof EnvironmentFailed || e instanceof Unattributable ? e.getCause() : e;
      out.databaseError = cause;
      abandonAll(queue, out);
      log.debug("batch of consumer group '{}' abandoned after a failure of the environment", group, cause);
    }
    return out;
  }

  /**
   * Puts a message's failure where it belongs: the named culprit out of the unit (failed, or dead when this was its
   * last delivery), or an unattributable failure split down until it can be pinned on one message.
   */
  private void isolate(BatchTransactions txs, Unit u, Exception failure, Mode mode, Settled out, Deque<Unit> queue)
      throws Unattributable {
    if (failure instanceof HandlerFailed hf) {
      Delivery d = u.candidates().get(hf.index);
      List<Delivery> rest = new ArrayList<>(u.candidates());
      rest.remove(hf.index);
      List<Dead> deadNow = new ArrayList<>(u.dead());
      if (mode.isFinal(d, config)) {
        deadNow.add(new Dead(d, describe(hf.getCause())));
      } else {
        out.failed.add(new Failure(d, hf.getCause()));
      }
      queue.addFirst(new Unit(rest, deadNow, u.lost()));
      return;
    }
    Unattributable ua = (Unattributable) failure;
    if (txs.broken(ua.getCause()) || u.candidates().isEmpty()) {
      queue.addFirst(u); // abandoned with the rest
      throw ua;
    }
    if (u.candidates().size() == 1 && u.dead().isEmpty() && u.lost().isEmpty()) {
      Delivery d = u.candidates().get(0);
      if (mode.isFinal(d, config)) {
        queue.addFirst(new Unit(List.of(), List.of(new Dead(d, describe(ua.getCause()))), List.of()));
      } else {
        out.failed.add(new Failure(d, ua.getCause()));
      }
    } else if (!u.dead().isEmpty() || !u.lost().isEmpty()) {
      queue.addFirst(new Unit(u.candidates(), List.of(), List.of()));
      queue.addFirst(new Unit(List.of(), u.dead(), u.lost()));
    } else {
      int half = u.candidates().size() / 2;
      queue.addFirst(new Unit(u.candidates().subList(half, u.candidates().size()), List.of(), List.of()));
      queue.addFirst(new Unit(u.candidates().subList(0, half), List.of(), List.of()));
    }
  }

  /** What is left in the queue decided nothing: it stays unacknowledged. */
  private static void abandonAll(Deque<Unit> queue, Settled out) {
    for (Unit u : queue) {
      out.abandoned.addAll(u.candidates());
      u.dead().forEach(x -> out.abandoned.add(x.delivery()));
      out.abandoned.addAll(u.lost());
    }
  }

  /** The error stored with a dead letter: its stack trace, cut at 8,000 characters. */
  static String describe(Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    String text = w.toString();
    return text.length() <= 8000 ? text : text.substring(0, 8000) + "\n\t... (truncated)";
  }
}
