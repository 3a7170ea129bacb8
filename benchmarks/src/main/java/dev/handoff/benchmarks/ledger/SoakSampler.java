package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * Reads every place where the soak's work is kept: the streams and Redis's memory, the outbox (and what of it is past
 * retention), the inbox, the heap, and the latencies of the window that ends.
 */
record SoakSampler(DataSource dataSource, UnifiedJedis redis, Soak.Config config) {

  /** Refuses a schema that holds payments or a key prefix whose streams exist: the soak counts from zero. */
  void requireFresh() {
    String schema = config.schema();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM information_schema.tables WHERE table_schema = '"
            + schema + "' AND table_name = 'payment'")) {
      rs.next();
      if (rs.getLong(1) > 0 && one(st, "SELECT count(*) FROM " + schema + ".payment") > 0) {
        throw new LedgerException("--schema '" + schema + "' already holds payments; the soak needs a schema of its"
            + " own (drop it, or pass another --schema)");
      }
    } catch (SQLException e) {
      throw new LedgerException("soak: could not inspect schema '" + schema + "': " + e.getMessage(), e);
    }
    for (int shard = 0; shard < config.shards(); shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        throw new LedgerException("--key-prefix '" + config.keyPrefix() + "': stream " + key + " exists already;"
            + " the soak needs a key prefix of its own");
      }
    }
  }

  /** One reading, {@code origin} being the start of the run; closes the latencies' current window. */
  Soak.Sample sample(long origin, long paid, long charged, Latencies latencies) {
    long streams = 0;
    for (int shard = 0; shard < config.shards(); shard++) {
      streams += redis.xlen(StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard));
    }
    long usedMemory = -1;
    for (String line : redis.info("memory").split("\r?\n")) {
      if (line.startsWith("used_memory:")) {
        usedMemory = Long.parseLong(line.substring("used_memory:".length()).strip());
      }
    }
    double t = (System.nanoTime() - origin) / 1e9;
    long[] window = latencies.roll(t);
    String schema = config.schema();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      long outbox = one(st, "SELECT count(*) FROM " + schema + ".outbox");
      long past = one(st, "SELECT count(*) FROM " + schema + ".outbox WHERE published_at < now() - make_interval(secs"
          + " => " + config.outboxRetention().toSeconds() + ")");
      long inbox = one(st, "SELECT count(*) FROM " + schema + ".inbox");
      return new Soak.Sample(t, paid, charged, streams, usedMemory, outbox, past, inbox, Heap.afterLastGc(),
          Latencies.p99Ms(window), Latencies.count(window));
    } catch (SQLException e) {
      throw new LedgerException("soak: could not sample the database: " + e.getMessage(), e);
    }
  }

  private static long one(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
