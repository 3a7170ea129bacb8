package dev.handoff.consumer;

import org.jooq.DSLContext;

/**
 * A {@link MessageHandler} for jOOQ users: {@code tx} runs on the transaction that holds the message's inbox
 * marker (dialect {@code POSTGRES}). The same contract applies, and is enforced the same way: jOOQ's
 * {@code tx.transaction(...)} ends in a commit that is refused, so the message fails; write with {@code tx} directly.
 */
@FunctionalInterface
public interface JooqMessageHandler {

  void handle(DSLContext tx, InboundMessage message) throws Exception;
}
