package dev.handoff.examples.orders;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.spring.HandoffListener;
import org.springframework.stereotype.Component;

/** One shipment per order, written through a JPA repository in the transaction of the message's inbox marker. */
@Component
public class Shipping {

  private final Shipments shipments;

  public Shipping(Shipments shipments) {
    this.shipments = shipments;
  }

  @HandoffListener(topic = "orders", group = "shipping")
  public void on(InboundMessage message) {
    shipments.save(new Shipment(message.key()));
  }
}
