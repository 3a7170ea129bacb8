package dev.handoff.examples.orders;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.spring.HandoffListener;
import dev.handoff.testkit.ConsumerTestKit;
import jakarta.persistence.EntityManager;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Handlers written every way a Spring team writes them (topic {@code styles}), and handlers that try to end the
 * batch's transaction (topic {@code misbehaving}). Each writes one effect row per call. The application's
 * DataSource is the test kit's strict one: a handler that borrows a connection of its own is refused.
 */
@TestConfiguration
class StyleListeners {

  static final String[] STYLES = {"plain", "jdbc-template", "jooq", "jpa", "tx-service"};
  static final String[] MISBEHAVING = {"commits", "rolls-back", "executes-commit", "requires-new", "own-connection"};

  @Bean
  static BeanPostProcessor strictDataSource() {
    return new BeanPostProcessor() {
      @Override
      public Object postProcessAfterInitialization(Object bean, String name) {
        return bean instanceof DataSource ds && name.equals("dataSource") ? ConsumerTestKit.strict(ds) : bean;
      }
    };
  }

  @Bean
  Listeners styleListeners(JdbcTemplate jdbc, DSLContext jooq, EntityManager jpa, EffectService service,
      DataSource dataSource) {
    return new Listeners(jdbc, jooq, jpa, service, dataSource);
  }

  static class Listeners {
    private final JdbcTemplate jdbc;
    private final DSLContext jooq;
    private final EntityManager jpa;
    private final EffectService service;
    private final DataSource dataSource;

    Listeners(JdbcTemplate jdbc, DSLContext jooq, EntityManager jpa, EffectService service, DataSource dataSource) {
      this.jdbc = jdbc;
      this.jooq = jooq;
      this.jpa = jpa;
      this.service = service;
      this.dataSource = dataSource;
    }

    @HandoffListener(topic = "styles", group = "plain")
    public void plain(InboundMessage m, Connection tx) throws SQLException {
      insert(tx, "plain", m.key());
      Poison.failIfPoisoned(m.key());
    }

    @HandoffListener(topic = "styles", group = "jdbc-template")
    public void jdbcTemplate(InboundMessage m) {
      jdbc.update("INSERT INTO effect (grp, order_id) VALUES (?, ?)", "jdbc-template", m.key());
      Poison.failIfPoisoned(m.key());
    }

    @HandoffListener(topic = "styles", group = "jooq")
    public void jooq(InboundMessage m) {
      jooq.insertInto(DSL.table("effect"), DSL.field("grp"), DSL.field("order_id")).values("jooq", m.key()).execute();
      Poison.failIfPoisoned(m.key());
    }

    @HandoffListener(topic = "styles", group = "jpa")
    public void jpa(InboundMessage m) {
      jpa.persist(new Effect("jpa", m.key()));
      Poison.failIfPoisoned(m.key());
    }

    @HandoffListener(topic = "styles", group = "tx-service")
    public void transactionalService(InboundMessage m) {
      service.record("tx-service", m.key());
    }

    @HandoffListener(topic = "misbehaving", group = "commits")
    public void commits(InboundMessage m, Connection tx) throws SQLException {
      insert(tx, "commits", m.key());
      tx.commit();
    }

    @HandoffListener(topic = "misbehaving", group = "rolls-back")
    public void rollsBack(InboundMessage m, Connection tx) throws SQLException {
      insert(tx, "rolls-back", m.key());
      tx.rollback();
      insert(tx, "rolls-back", m.key());
    }

    @HandoffListener(topic = "misbehaving", group = "executes-commit")
    public void executesCommit(InboundMessage m) {
      jdbc.update("INSERT INTO effect (grp, order_id) VALUES (?, ?)", "executes-commit", m.key());
      jdbc.execute("COMMIT");
    }

    @HandoffListener(topic = "misbehaving", group = "requires-new")
    public void requiresNew(InboundMessage m) {
      service.recordApart("requires-new", m.key());
    }

    @HandoffListener(topic = "misbehaving", group = "own-connection")
    public void ownConnection(InboundMessage m) throws SQLException {
      try (Connection own = dataSource.getConnection()) {
        insert(own, "own-connection", m.key());
      }
    }

    private static void insert(Connection c, String group, String key) throws SQLException {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect (grp, order_id) VALUES (?, ?)")) {
        ps.setString(1, group);
        ps.setString(2, key);
        ps.executeUpdate();
      }
    }
  }
}
