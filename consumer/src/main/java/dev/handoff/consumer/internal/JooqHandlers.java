package dev.handoff.consumer.internal;

import dev.handoff.consumer.JooqMessageHandler;
import dev.handoff.consumer.MessageHandler;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/** Adapts jOOQ handlers; kept apart so that jOOQ is loaded only by applications that use it. */
public final class JooqHandlers {

  private JooqHandlers() {}

  public static MessageHandler adapt(JooqMessageHandler handler) {
    return (tx, message) -> handler.handle(DSL.using(tx, SQLDialect.POSTGRES), message);
  }
}
