package dev.handoff.consumer.internal;

import dev.handoff.consumer.BatchMessageHandler;
import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.FailureIsolation;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.consumer.internal.BatchSettler.Mode;
import dev.handoff.consumer.internal.Settled.Dead;
import dev.handoff.consumer.internal.Settled.Failure;
import dev.handoff.core.internal.StreamId;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;

/**
 * One attempt at a unit of a batch in one transaction: the verdicts of its lost and dead deliveries, the inbox
 * markers of its candidates (sealed, see {@link HandlerTransaction}), the handlers of the messages whose marker is
 * new, then the commit. {@link BatchSettler} decides what to try next from how an attempt ends.
 *
 * <p>All or nothing: an attempt adds its outcome to {@link Settled} only once its transaction committed; whatever
 * ends it earlier rolls it back and is thrown as {@link HandlerFailed} (the culprit is known), {@link Unattributable}
 * (it is not) or {@link Abandoned} (close gave up waiting).
 *
 * <p>Thread-safe: it keeps no state between calls; the handlers must be thread-safe when there are several workers.
 */
final class SettleAttempt {

  /** A part of a batch settled in one transaction: deliveries to handle, to dead-letter, and lost in Redis. */
  record Unit(List<Delivery> candidates, List<Dead> dead, List<Delivery> lost) {
    boolean isEmpty() {
      return candidates.isEmpty() && dead.isEmpty() && lost.isEmpty();
    }
  }

  /** A handler threw, and its message ({@code index} into the unit's candidates) is the culprit. */
  static final class HandlerFailed extends Exception {
    private static final long serialVersionUID = 1L;
    final int index;

    HandlerFailed(int index, Throwable cause) {
      super(cause);
      this.index = index;
    }
  }

  /**
   * The transaction failed and no one message can be named: the commit failed, a batch handler failed for several
   * messages, or a handler swallowed an SQL error so that a later statement met the aborted transaction.
   */
  static final class Unattributable extends Exception {
    private static final long serialVersionUID = 1L;

    Unattributable(Throwable cause) {
      super(cause);
    }
  }

  /** An ordered group's fence found that another consumer took the shard: roll back, leave everything. */
  static final class FencedOut extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Unit unit;

    FencedOut(Unit unit) {
      super(null, null, false, false);
      this.unit = unit;
    }
  }

  /** The consumer is closing past its deadline: stop, roll back, leave everything unacknowledged. */
  static final class Abandoned extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Unit unit;

    Abandoned(Unit unit) {
      super(null, null, false, false);
      this.unit = unit;
    }
  }

  private final ConsumerConfig config;
  private final MessageHandler handler;
  private final BatchMessageHandler batchHandler;
  private final InboxQueries inbox;
  private final VerdictWriter verdicts;
  private final String group;

  SettleAttempt(ConsumerConfig config, Collaborators collaborators, InboxQueries inbox, VerdictWriter verdicts) {
    this.config = config;
    this.handler = collaborators.handler();
    this.batchHandler = collaborators.batchHandler();
    this.inbox = inbox;
    this.verdicts = verdicts;
    this.group = config.group();
  }

  /**
   * Runs {@code u} in the next transaction of {@code txs} and, once it committed, adds its outcome to {@code out}.
   *
   * @param recovered the outbox's copies of the unit's lost deliveries, where it still had them
   * @param abandon true once close gave up waiting: checked between messages and before the commit
   */
  void run(BatchTransactions txs, Unit u, Mode mode, Map<Delivery, InboundMessage> recovered, Settled out,
      ConsumerFaults hook, BooleanSupplier abandon, OrderedSettling ordered)
      throws HandlerFailed, Unattributable, SQLException {
    Connection c = txs.begin();
    if (ordered != null) {
      // A frozen former owner's transaction holds the markers the next owner must insert: PostgreSQL ends it once
      // it sat idle for the lease TTL, so that the shard goes on without it (its late commit then fails as well).
      try (Statement st = c.createStatement()) {
        st.execute("SET LOCAL idle_in_transaction_session_timeout = " + ordered.idleTimeout().toMillis());
      }
    }
    List<Delivery> handled = new ArrayList<>();
    List<Delivery> duplicates = new ArrayList<>();
    List<Dead> dead = new ArrayList<>();
    List<Delivery> lost = new ArrayList<>();
    List<Failure> failed = new ArrayList<>();
    try {
      for (Delivery d : u.lost()) {
        if (verdicts.writeLost(c, d, recovered.get(d))) {
          lost.add(d);
        } else {
          duplicates.add(d);
        }
      }
      for (Dead x : u.dead()) {
        if (verdicts.writeDead(c, x)) {
          dead.add(x);
        } else {
          duplicates.add(x.delivery());
        }
      }
      // The first delivery of a message ID in the batch is the one that may run; a second copy in the same batch
      // (a duplicate publish read together with the original) is a duplicate like any other.
      Map<UUID, Delivery> first = new LinkedHashMap<>();
      for (Delivery d : u.candidates()) {
        first.putIfAbsent(d.message.messageId(), d);
      }
      List<UUID> ids = new ArrayList<>(first.keySet());
      List<String> streamIds = new ArrayList<>(ids.size());
      for (Delivery d : first.values()) {
        streamIds.add(d.id);
      }
      // The seal goes in with the markers (no round trip of its own), and comes out with the COMMIT.
      HandlerTransaction guard = HandlerTransaction.of(c, config.schema(), group);
      Set<UUID> inserted = inbox.insertSealed(c, group, ids, streamIds, InboxQueries.PROCESSED, guard.token());
      guard.sealedBy(!ids.isEmpty());
      boolean savepoints = config.retries().failureIsolation() == FailureIsolation.SAVEPOINT_PER_MESSAGE
          && txs.savepointsUndoHandlers();
      if (batchHandler != null) {
        List<InboundMessage> fresh = new ArrayList<>(inserted.size());
        int only = -1;
        for (int i = 0; i < u.candidates().size(); i++) {
          Delivery d = u.candidates().get(i);
          UUID id = d.message.messageId();
          if (first.get(id) != d || !inserted.contains(id)) {
            duplicates.add(d);
          } else {
            fresh.add(d.message);
            handled.add(d);
            only = i;
          }
        }
        if (abandon.getAsBoolean()) {
          throw new Abandoned(u);
        }
        if (!fresh.isEmpty()) {
          try {
            runBatchHandler(guard, fresh);
          } catch (Exception e) {
            if (abandon.getAsBoolean()) {
              throw new Abandoned(u);
            }
            // One message: it is the culprit. Several: unknown, so bisect.
            if (fresh.size() == 1 && (!Jdbc.transactionAborted(e) || HandlerTransaction.endedBy(e))) {
              throw new HandlerFailed(only, e);
            }
            throw new Unattributable(e);
          }
        }
      }
      for (int i = 0; batchHandler == null && i < u.candidates().size(); i++) {
        Delivery d = u.candidates().get(i);
        UUID id = d.message.messageId();
        if (first.get(id) != d || !inserted.contains(id)) {
          duplicates.add(d);
          continue;
        }
        if (abandon.getAsBoolean()) {
          throw new Abandoned(u);
        }
        Savepoint sp = savepoints ? c.setSavepoint() : null;
        try {
          runHandler(guard, d.message);
          if (sp != null) {
            guard.release(sp);
          }
          handled.add(d);
        } catch (Exception e) {
          if (abandon.getAsBoolean()) {
            throw new Abandoned(u); // interrupted by close: not the message's fault
          }
          if (HandlerTransaction.endedBy(e)) {
            throw new HandlerFailed(i, e); // whatever the mode: no savepoint of this transaction is left to undo
          }
          if (sp == null || ordered != null) {
            // Ordered: nothing after a failed message may commit before it, so its successors do not run on here.
            if (Jdbc.transactionAborted(e)) {
              throw new Unattributable(e);
            }
            throw new HandlerFailed(i, e);
          }
          if (Blame.of(e) != Blame.MESSAGE) {
            throw new Unattributable(e); // the whole transaction is redone or paused, not this message failed
          }
          guard.rollbackTo(sp);
          inbox.delete(c, group, id);
          if (mode.isFinal(d, config)) {
            Dead x = new Dead(d, BatchSettler.describe(e));
            verdicts.writeDead(c, x);
            dead.add(x);
          } else {
            failed.add(new Failure(d, e));
          }
        }
      }
      // Last before the commit: the lease row stays locked until the transaction ends, so a takeover waits for it.
      if (ordered != null && !ordered.fence().holds(c, lastStreamId(u))) {
        throw new FencedOut(u);
      }
      hook.at(ConsumerFaults.Point.BEFORE_COMMIT);
      if (abandon.getAsBoolean()) {
        throw new Abandoned(u);
      }
      txs.commit(guard);
    } catch (Abandoned | FencedOut e) {
      txs.rollback();
      throw e;
    } catch (HandlerFailed | Unattributable e) {
      txs.rollback();
      throw e;
    } catch (SQLException | RuntimeException e) {
      txs.rollback();
      throw new Unattributable(e);
    }
    out.handled.addAll(handled);
    out.duplicates.addAll(duplicates);
    out.dead.addAll(dead);
    out.lost.addAll(lost);
    out.failed.addAll(failed);
  }

  /** The highest stream entry of the unit: an ordered group's position once it commits. */
  private static String lastStreamId(Unit u) {
    StreamId last = StreamId.ZERO;
    String text = null;
    for (Delivery d : OrderedIsolation.deliveriesOf(u)) {
      StreamId id = StreamId.parse(d.id);
      if (text == null || id.compareTo(last) > 0) {
        last = id;
        text = d.id;
      }
    }
    return text;
  }

  /** The handler, with the message in the MDC for its log lines, on the guarded connection. */
  private void runHandler(HandlerTransaction guard, InboundMessage message) throws Exception {
    HandlerMdc mdc = HandlerMdc.of(message, group);
    try {
      guard.run("message " + message.messageId(), tx -> handler.handle(tx, message));
    } finally {
      mdc.close();
    }
  }

  private void runBatchHandler(HandlerTransaction guard, List<InboundMessage> messages) throws Exception {
    HandlerMdc mdc = HandlerMdc.ofBatch(config.topic().name(), group);
    try {
      guard.run("a batch of " + messages.size() + " message(s)", tx -> batchHandler.handle(tx, messages));
    } finally {
      mdc.close();
    }
  }
}
