package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.internal.BatchSettler.Mode;
import dev.handoff.consumer.internal.SettleAttempt.HandlerFailed;
import dev.handoff.consumer.internal.SettleAttempt.Unattributable;
import dev.handoff.consumer.internal.SettleAttempt.Unit;
import dev.handoff.consumer.internal.Settled.Dead;
import dev.handoff.consumer.internal.Settled.Failure;
import java.util.ArrayList;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where a failure in a batch of a group ordered per shard leaves its messages: nothing after the failed one commits
 * before it. What comes before it is tried again on its own and commits; the failed message waits for its backoff,
 * and what comes after it waits behind it ({@link Settled#deferred}), untried. A failure no one message can be
 * named for splits the unit in order: its first half is tried, its second half waits. A message out of deliveries is
 * dead-lettered in its place, committing with what came before it and followed at once by what came after it; or,
 * under {@code STOP_SHARD}, it waits for an operator ({@link Settled#stoppedHead}).
 *
 * <p>One per settled batch; not thread-safe.
 */
final class OrderedIsolation {

  private final ConsumerConfig config;
  private final OrderedSettling ordered;
  /** Each delivery's place in the batch, which is stream order. */
  private final Map<Delivery, Integer> place = new IdentityHashMap<>();

  OrderedIsolation(ConsumerConfig config, OrderedSettling ordered, List<Delivery> batch) {
    this.config = config;
    this.ordered = ordered;
    for (int i = 0; i < batch.size(); i++) {
      place.put(batch.get(i), i);
    }
  }

  /**
   * Puts the failure of {@code u} where it belongs, queueing what is tried next.
   *
   * @throws Unattributable when the connection broke or nothing in the unit could be blamed: the environment's
   */
  void isolate(BatchTransactions txs, Unit u, Exception failure, Mode mode, Settled out, Deque<Unit> queue)
      throws Unattributable {
    Delivery culprit;
    Throwable cause = failure.getCause();
    if (failure instanceof HandlerFailed hf) {
      culprit = u.candidates().get(hf.index);
    } else {
      Unattributable ua = (Unattributable) failure;
      List<Delivery> all = inOrder(u);
      if (txs.broken(cause) || u.candidates().isEmpty()) {
        queue.addFirst(u); // abandoned with the rest
        throw ua;
      }
      if (all.size() > 1) {
        int half = all.size() / 2;
        queue.addFirst(part(u, all.subList(0, half)));
        out.deferred.addAll(all.subList(half, all.size()));
        return;
      }
      culprit = all.get(0);
    }
    int at = place.get(culprit);
    List<Delivery> before = new ArrayList<>();
    List<Delivery> after = new ArrayList<>();
    for (Delivery d : inOrder(u)) {
      if (place.get(d) < at) {
        before.add(d);
      } else if (place.get(d) > at) {
        after.add(d);
      }
    }
    Unit first = part(u, before);
    boolean skipped = culprit.id.equals(ordered.skipStreamId());
    boolean exhausted = mode.isFinal(culprit, config);
    if (skipped || exhausted && ordered.deadLetterExhausted()) {
      List<Dead> dead = new ArrayList<>(first.dead());
      dead.add(new Dead(culprit, skipped
          ? "dead-lettered by an operator (handoff ordered resume --skip) after " + culprit.deliveries
              + " deliveries; last failure: " + BatchSettler.describe(cause)
          : BatchSettler.describe(cause)));
      queue.addFirst(part(u, after));
      queue.addFirst(new Unit(first.candidates(), dead, first.lost()));
      return;
    }
    out.failed.add(new Failure(culprit, cause));
    out.stoppedHead = exhausted;
    out.deferred.addAll(after);
    queue.addFirst(first);
  }

  /** Every delivery of {@code u}, in stream order. */
  private List<Delivery> inOrder(Unit u) {
    List<Delivery> all = deliveriesOf(u);
    all.sort((a, b) -> Integer.compare(place.get(a), place.get(b)));
    return all;
  }

  /** The part of {@code u} that {@code keep} holds. */
  private static Unit part(Unit u, List<Delivery> keep) {
    Set<Delivery> kept = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    kept.addAll(keep);
    return new Unit(u.candidates().stream().filter(kept::contains).toList(),
        u.dead().stream().filter(x -> kept.contains(x.delivery())).toList(),
        u.lost().stream().filter(kept::contains).toList());
  }

  /** Every delivery of {@code u}: candidates, dead and lost. */
  static List<Delivery> deliveriesOf(Unit u) {
    List<Delivery> all = new ArrayList<>(u.candidates());
    u.dead().forEach(x -> all.add(x.delivery()));
    all.addAll(u.lost());
    return all;
  }
}
