package dev.handoff.examples.orders;

import org.springframework.data.jpa.repository.JpaRepository;

/** The shipments, through JPA. */
public interface Shipments extends JpaRepository<Shipment, String> {}
