package dev.handoff.consumer.status;

import java.time.Instant;
import java.util.Objects;

/**
 * A worker that the environment's failure has paused: a lost database or Redis connection, a revoked grant, a
 * missing table, a handler's {@link dev.handoff.consumer.RetryLaterException}. It holds its batch, counts no delivery, retries with
 * backoff, and resumes on its own once an attempt goes through.
 *
 * @param worker the worker's consumer name
 * @param reason the failure that began the pause, on one line
 * @param since when the pause began
 * @param retries attempts that failed again since then
 */
public record PausedWorker(String worker, String reason, Instant since, long retries) {

  public PausedWorker {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(since, "since");
  }
}
