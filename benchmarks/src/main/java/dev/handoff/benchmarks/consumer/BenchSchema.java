package dev.handoff.benchmarks.consumer;

import dev.handoff.migrations.HandoffMigrations;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.ScanParams;

/** A benchmark round's clean slate: handoff's tables anew in its schema, its own table, and none of its Redis keys. */
final class BenchSchema {

  private BenchSchema() {}

  /** The rows of {@code table}. */
  static long count(DataSource ds, String table) throws Exception {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Drops and migrates {@code schema}, creates {@code table} ({@code CREATE TABLE} text) and deletes the keys. */
  static void reset(DataSource ds, RedisClient redis, String schema, String keyPrefix, String table)
      throws Exception {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
    HandoffMigrations.migrate(ds, schema);
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(table);
    }
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      var page = redis.scan(cursor, new ScanParams().match(keyPrefix + ":*").count(1000));
      if (!page.getResult().isEmpty()) {
        redis.del(page.getResult().toArray(String[]::new));
      }
      cursor = page.getCursor();
    } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
  }
}
