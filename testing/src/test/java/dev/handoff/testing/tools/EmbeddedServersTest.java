package dev.handoff.testing.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The embedded PostgreSQL that the benchmarks' {@code bench} starts is durable unless asked otherwise: the settings
 * a production database runs with, read back from the server itself.
 */
class EmbeddedServersTest {

  @Test
  void aDurableEmbeddedPostgresRunsWithFsyncSynchronousCommitAndFullPageWritesOn() throws Exception {
    try (EmbeddedServers servers = EmbeddedServers.start(true, false, true)) {
      assertThat(settings(servers.jdbcUrl())).containsExactly(
          Map.entry("fsync", "on"), Map.entry("full_page_writes", "on"), Map.entry("synchronous_commit", "on"));
    }
  }

  @Test
  void theUnsafeFastEmbeddedPostgresTurnsAllThreeOff() throws Exception {
    try (EmbeddedServers servers = EmbeddedServers.start(true, false, false)) {
      assertThat(settings(servers.jdbcUrl())).containsExactly(
          Map.entry("fsync", "off"), Map.entry("full_page_writes", "off"), Map.entry("synchronous_commit", "off"));
    }
  }

  private static Map<String, String> settings(String jdbcUrl) throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    try (Connection c = DriverManager.getConnection(jdbcUrl);
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT name, setting FROM pg_settings"
            + " WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes') ORDER BY name")) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getString(2));
      }
    }
    return out;
  }
}
