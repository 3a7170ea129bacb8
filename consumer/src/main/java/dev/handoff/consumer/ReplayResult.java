package dev.handoff.consumer;

import java.util.List;
import java.util.UUID;

/**
 * What a {@link HandoffConsumer#replayFromOutbox replay from the outbox} did, or has done so far (in
 * {@link ConsumerListener#replayProgress progress reports}). Every row of the range the outbox held is counted in
 * exactly one of {@code handled}, {@code duplicates}, {@code failed} and {@code unpublished}; rows it no longer holds
 * are counted in {@code purged}, {@code possiblyPurged} or {@code missing}.
 *
 * @param offered rows read from the outbox and run through the consumer ({@code handled + duplicates + failed})
 * @param handled rows whose message had no inbox marker: the handler ran and committed, as a delivery would
 * @param duplicates rows whose message had a marker (processed or dead-lettered): the handler was skipped
 * @param failed rows whose handler failed or whose row could not be read; nothing of theirs committed, nothing
 *     was dead-lettered
 * @param failures the failed rows, oldest first, at most {@value #MAX_FAILURES_LISTED} of them
 * @param unpublished rows of the range the relay had not published yet: left to the relay, not replayed
 * @param purged rows of the range that the outbox retention had already deleted: they cannot be replayed
 * @param possiblyPurged rows the retention deleted that may or may not have belonged to the range (a purge batch
 *     that straddles the range's bounds, or a key bound, which the purge log does not record): at most this many
 *     more rows of the range are gone
 * @param missing message IDs of the range that the outbox does not hold (purged, or never appended)
 */
public record ReplayResult(long offered, long handled, long duplicates, long failed, List<Failure> failures,
    long unpublished, long purged, long possiblyPurged, long missing) {

  /** How many failures {@link #failures()} lists at most; {@link #failed()} counts them all. */
  public static final int MAX_FAILURES_LISTED = 1_000;

  /** A row that could not be replayed, and why. */
  public record Failure(UUID messageId, long outboxId, Throwable error) {

    @Override
    public String toString() {
      return "message " + messageId + " (outbox id " + outboxId + "): " + error;
    }
  }

  public ReplayResult {
    failures = List.copyOf(failures);
  }

  /** Whether every row of the range was still there and was replayed without a failure. */
  public boolean complete() {
    return failed == 0 && unpublished == 0 && purged == 0 && possiblyPurged == 0 && missing == 0;
  }

  /** One line for logs and assertion messages, naming what could not be replayed. */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("replayed ").append(offered).append(" row(s): ").append(handled)
        .append(" handled, ").append(duplicates).append(" duplicate(s), ").append(failed).append(" failed");
    if (unpublished > 0) {
      b.append("; ").append(unpublished).append(" row(s) of the range not published yet, left to the relay");
    }
    if (purged > 0) {
      b.append("; ").append(purged).append(" row(s) of the range were purged by the outbox retention");
    }
    if (possiblyPurged > 0) {
      b.append("; up to ").append(possiblyPurged).append(" more row(s) of the range may have been purged");
    }
    if (missing > 0) {
      b.append("; ").append(missing).append(" message ID(s) not in the outbox (purged, or never appended)");
    }
    if (!failures.isEmpty()) {
      b.append("; first failure: ").append(failures.get(0));
    }
    return b.toString();
  }
}
