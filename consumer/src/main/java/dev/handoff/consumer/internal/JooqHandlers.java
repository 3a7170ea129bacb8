package dev.handoff.consumer.internal;

import dev.handoff.consumer.JooqMessageHandler;
import dev.handoff.consumer.MessageHandler;
import org.jooq.SQLDialect;
import org.jooq.impl.DefaultDSLContext;

/** Adapts jOOQ handlers; kept apart so that jOOQ is loaded only by applications that use it. */
public final class JooqHandlers {

  private JooqHandlers() {}

  public static MessageHandler adapt(JooqMessageHandler handler) {
    // What DSL.using(tx, POSTGRES) returns. Resolving DSL.using's overloads reads org.jooq.conf.Settings, whose
    // JAXB annotations javac warns about (jakarta.xml.bind is not on the classpath), and main code compiles with
    // warnings as errors.
    return (tx, message) -> handler.handle(new DefaultDSLContext(tx, SQLDialect.POSTGRES), message);
  }
}
