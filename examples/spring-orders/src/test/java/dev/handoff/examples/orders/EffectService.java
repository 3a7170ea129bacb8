package dev.handoff.examples.orders;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/** A service of the application's own, called from handlers the way services are. */
@Service
public class EffectService {

  private final JdbcTemplate jdbc;

  public EffectService(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  /** Joins the caller's transaction (the default propagation): the effect, then the failure of a poisoned order. */
  @Transactional
  public void record(String group, String orderId) {
    jdbc.update("INSERT INTO effect (grp, order_id) VALUES (?, ?)", group, orderId);
    Poison.failIfPoisoned(orderId);
  }

  /** Commits on its own, which a handler must not do. */
  @Transactional(propagation = Propagation.REQUIRES_NEW)
  public void recordApart(String group, String orderId) {
    jdbc.update("INSERT INTO effect (grp, order_id) VALUES (?, ?)", group, orderId);
  }
}
