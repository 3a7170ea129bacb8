package dev.handoff.consumer;

/**
 * How one failing handler is kept from undoing the work of the other messages of its batch.
 *
 * <p>Both keep a failed message's marker and effects out of the commit, leave its stream entry pending and commit
 * every other message of the batch in one transaction. They differ in cost and in how often a handler runs.
 */
public enum FailureIsolation {

  /**
   * The default. The whole batch runs in one transaction with no savepoints; when a handler throws, the
   * transaction is rolled back and run again without the failed message (the exception names the culprit; when a
   * failure cannot be pinned on one message, such as a failed commit or a {@link BatchMessageHandler} call, the
   * batch is split in halves). The fast path costs nothing extra, but after a sibling's failure the other
   * handlers of the batch run again, so their non-database side effects can repeat. Measured 2.4x to 2.9x the
   * throughput of {@link #SAVEPOINT_PER_MESSAGE} (ConsumerBenchmark: batches of 100, one insert per message,
   * embedded PostgreSQL 17, four runs), which is why it is the default.
   */
  OPTIMISTIC_BATCH,

  /**
   * A savepoint around each handler call: a failure rolls back to it and the batch goes on. Each handler runs
   * once per delivery, at the cost of two extra statements (SAVEPOINT, RELEASE) per message.
   */
  SAVEPOINT_PER_MESSAGE
}
