package dev.handoff.examples.orders;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A shipment requested for an order. */
@Entity
@Table(name = "shipment")
public class Shipment {

  @Id
  private String orderId;

  protected Shipment() {}

  public Shipment(String orderId) {
    this.orderId = orderId;
  }

  public String getOrderId() {
    return orderId;
  }
}
