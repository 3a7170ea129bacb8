package dev.handoff.examples.orders;

import dev.handoff.testing.TestServers;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The suite's PostgreSQL and Redis as Spring properties, with a database schema and Redis key prefix of the test's
 * own, so that test classes sharing the servers never see each other's rows or streams.
 */
final class TestInfrastructure {

  private TestInfrastructure() {}

  /** The properties of an application whose tables live in schema {@code name}, and handoff's in {@code name_handoff}. */
  static Map<String, String> properties(String name) {
    TestServers.Postgres pg = TestServers.postgres();
    Properties login = new Properties();
    if (pg.user() != null) {
      login.setProperty("user", pg.user());
    }
    if (pg.password() != null) {
      login.setProperty("password", pg.password());
    }
    try (Connection c = DriverManager.getConnection(pg.jdbcUrl(), login); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA IF NOT EXISTS " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create schema " + name, e);
    }
    Map<String, String> p = new LinkedHashMap<>();
    p.put("spring.datasource.url", pg.jdbcUrl() + (pg.jdbcUrl().contains("?") ? "&" : "?") + "currentSchema=" + name);
    p.put("spring.datasource.username", pg.user() != null ? pg.user() : "");
    p.put("spring.datasource.password", pg.password() != null ? pg.password() : "");
    p.put("spring.sql.init.schema-locations", "classpath:schema.sql,classpath:test-schema.sql");
    p.put("handoff.schema", name + "_handoff");
    p.put("handoff.key-prefix", name);
    p.put("handoff.redis.url", TestServers.redis().toString());
    return p;
  }
}
