package dev.handoff.consumer;

/**
 * Thrown by a handler to say that its failure is not its message's fault: a service it calls is down, a lock is
 * busy, a quota is spent. The consumer treats it as it treats the environment's own failures (a lost database
 * connection, a revoked grant, a missing table): the batch is rolled back, <b>no delivery is counted and nothing is
 * dead-lettered</b>; the worker pauses with backoff, says so once at WARN and through
 * {@link ConsumerListener#paused}, and retries the same batch until it goes through.
 *
 * <p>Anything else a handler throws counts as a failed delivery of its message, which after
 * {@code maxDeliveries} ends in a dead letter. Throw this only for failures that would pass for any message; a
 * message that can never succeed would otherwise stop the worker for good.
 */
public class RetryLaterException extends ConsumerException {

  private static final long serialVersionUID = 1L;

  public RetryLaterException(String message) {
    super(message);
  }

  public RetryLaterException(String message, Throwable cause) {
    super(message, cause);
  }
}
