package dev.handoff.examples.orders;

import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** One effect of a handler, written through JPA. */
@Entity
@Table(name = "effect")
public class Effect {

  @Id
  @GeneratedValue(strategy = GenerationType.IDENTITY)
  private Long id;

  private String grp;

  private String orderId;

  protected Effect() {}

  Effect(String grp, String orderId) {
    this.grp = grp;
    this.orderId = orderId;
  }
}
