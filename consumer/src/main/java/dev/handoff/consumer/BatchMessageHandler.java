package dev.handoff.consumer;

import java.sql.Connection;
import java.util.List;

/**
 * The application's work for the new messages of one batch at once, in the transaction that holds their inbox
 * markers: the same contract as {@link MessageHandler}, but the handler may write all effects in one round trip
 * (a JDBC batch, a multi-row insert), which is what makes a consumer run near raw-insert speed.
 *
 * <p>{@code messages} holds only messages whose marker was just inserted (duplicates are already filtered out),
 * in stream order. When the call throws, handoff cannot tell which message was at fault: it rolls the transaction
 * back and bisects (runs each half again, down to single messages), so the handler must tolerate being called
 * again with a subset, and a message that fails alone is retried with backoff and dead-lettered after
 * {@code maxDeliveries}. Requires {@link FailureIsolation#OPTIMISTIC_BATCH}.
 */
@FunctionalInterface
public interface BatchMessageHandler {

  void handle(Connection tx, List<InboundMessage> messages) throws Exception;
}
