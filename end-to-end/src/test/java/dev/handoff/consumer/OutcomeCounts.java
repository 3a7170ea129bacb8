package dev.handoff.consumer;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

/** A listener that counts what tests of failure handling assert on: failed deliveries, dead letters, pauses. */
final class OutcomeCounts implements ConsumerListener {
  final AtomicInteger failed = new AtomicInteger();
  final AtomicInteger deadLettered = new AtomicInteger();
  final AtomicInteger paused = new AtomicInteger();
  final AtomicInteger resumed = new AtomicInteger();

  @Override
  public void failed(InboundMessage message, Throwable error, Duration backoff) {
    failed.incrementAndGet();
  }

  @Override
  public void deadLettered(String streamKey, String streamId, UUID messageId, String error) {
    deadLettered.incrementAndGet();
  }

  @Override
  public void paused(String worker, Throwable cause) {
    paused.incrementAndGet();
  }

  @Override
  public void resumed(String worker, Duration pausedFor) {
    resumed.incrementAndGet();
  }
}
