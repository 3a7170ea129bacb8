package dev.handoff.consumer;

import org.jooq.DSLContext;

/**
 * A {@link MessageHandler} for jOOQ users: {@code tx} runs on the transaction that holds the message's inbox
 * marker (dialect {@code POSTGRES}). The same contract applies: do not commit or roll back.
 */
@FunctionalInterface
public interface JooqMessageHandler {

  void handle(DSLContext tx, InboundMessage message) throws Exception;
}
