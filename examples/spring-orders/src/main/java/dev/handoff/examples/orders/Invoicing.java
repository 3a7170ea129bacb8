package dev.handoff.examples.orders;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.spring.HandoffListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** One invoice per order, written with JdbcTemplate in the transaction of the message's inbox marker. */
@Component
public class Invoicing {

  private final JdbcTemplate jdbc;

  public Invoicing(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @HandoffListener(topic = "orders", group = "invoicing")
  public void on(InboundMessage message) {
    jdbc.update("INSERT INTO invoice (order_id, amount_cents) VALUES (?, ?)",
        message.key(), Long.parseLong(message.payloadAsString()));
  }
}
