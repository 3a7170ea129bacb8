package dev.handoff.consumer;

/**
 * What one poll (or one replay) did. Every entry it touched is counted in exactly one of the outcome fields.
 *
 * @param read entries read or claimed from the streams (replays: messages offered)
 * @param handled handler ran and committed
 * @param duplicates already had an inbox marker: handler skipped, acknowledged
 * @param failed handler failed: left pending with a backoff
 * @param deadLettered moved to the dead-letter table and acknowledged
 * @param lost payload gone from the stream: recorded and acknowledged
 * @param reclaimed of {@code read}, how many were claimed from other (or earlier) consumers
 */
public record PollResult(int read, int handled, int duplicates, int failed, int deadLettered, int lost,
    int reclaimed) {

  public static final PollResult EMPTY = new PollResult(0, 0, 0, 0, 0, 0, 0);

  public PollResult plus(PollResult o) {
    return new PollResult(read + o.read, handled + o.handled, duplicates + o.duplicates, failed + o.failed,
        deadLettered + o.deadLettered, lost + o.lost, reclaimed + o.reclaimed);
  }

  /** Whether the poll found nothing to do. */
  public boolean isEmpty() {
    return read == 0 && lost == 0;
  }
}
