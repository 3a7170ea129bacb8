package dev.handoff.examples.orders;

import dev.handoff.outbox.Message;
import dev.handoff.spring.TransactionalOutbox;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row and its message commit together, or neither does. */
@Service
public class OrderService {

  private final JdbcTemplate jdbc;
  private final TransactionalOutbox outbox;

  public OrderService(JdbcTemplate jdbc, TransactionalOutbox outbox) {
    this.jdbc = jdbc;
    this.outbox = outbox;
  }

  @Transactional
  public void placeOrder(String orderId, long amountCents) {
    jdbc.update("INSERT INTO orders (id, amount_cents) VALUES (?, ?)", orderId, amountCents);
    outbox.append(Message.builder("orders", "order-placed")
        .key(orderId)
        .payload(Long.toString(amountCents))
        .build());
  }
}
