package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerListener;
import dev.handoff.consumer.InboundMessage;
import java.time.Duration;
import java.util.UUID;

/** Two listeners in a row: the ledger's counters first, then the caller's own. */
record ListenerPair(ConsumerListener first, ConsumerListener second) implements ConsumerListener {

  @Override
  public void handled(InboundMessage m) {
    first.handled(m);
    second.handled(m);
  }

  @Override
  public void duplicate(InboundMessage m) {
    first.duplicate(m);
    second.duplicate(m);
  }

  @Override
  public void failed(InboundMessage m, Throwable error, Duration backoff) {
    first.failed(m, error, backoff);
    second.failed(m, error, backoff);
  }

  @Override
  public void deadLettered(String streamKey, String streamId, UUID messageId, String error) {
    first.deadLettered(streamKey, streamId, messageId, error);
    second.deadLettered(streamKey, streamId, messageId, error);
  }

  @Override
  public void reclaimed(String streamKey, int count) {
    first.reclaimed(streamKey, count);
    second.reclaimed(streamKey, count);
  }

  @Override
  public void lost(String streamKey, String streamId) {
    first.lost(streamKey, streamId);
    second.lost(streamKey, streamId);
  }

  @Override
  public void leaseLost(String streamKey, String streamId) {
    first.leaseLost(streamKey, streamId);
    second.leaseLost(streamKey, streamId);
  }

  @Override
  public void groupRecreated(String streamKey) {
    first.groupRecreated(streamKey);
    second.groupRecreated(streamKey);
  }

  @Override
  public void batchCommitted(int size, Duration elapsed) {
    first.batchCommitted(size, elapsed);
    second.batchCommitted(size, elapsed);
  }
}
