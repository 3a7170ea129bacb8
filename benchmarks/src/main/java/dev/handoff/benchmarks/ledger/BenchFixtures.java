package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.tools.Sql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The schemas and key prefixes the benchmark runs in: the main one, which must be fresh, and the auxiliary ones
 * ({@code <schema>_<suffix>}, {@code <prefix>-<suffix>}), which belong to the benchmark; and the rows they start
 * with.
 */
record BenchFixtures(DataSource dataSource, UnifiedJedis redis, Bench.Config config) {

  /** What a schema holds before a run: see {@link #seedHistory}. */
  enum History { NONE, WITHOUT_OUTBOX_ROWS, FULL }

  /** The benchmark's statements, on a connection of their own each. */
  Sql sql() {
    return new Sql(dataSource, "benchmark");
  }

  /** The auxiliary schema {@code <schema>_<suffix>}. */
  String aux(String suffix) {
    return config.schema() + "_" + suffix;
  }

  /** The auxiliary key prefix {@code <prefix>-<suffix>}. */
  String auxPrefix(String suffix) {
    return config.keyPrefix() + "-" + suffix;
  }

  /** Refuses a schema that holds payments or a key prefix whose streams exist: the benchmark counts from zero. */
  void requireFresh(String schema, String prefix) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, schema + ".payment");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (rs.getBoolean(1) && sql().queryLong("SELECT count(*) FROM " + schema + ".payment") > 0) {
          throw new LedgerException("schema '" + schema + "' already holds payments; the benchmark needs a fresh one"
              + " (pass another --schema)");
        }
      }
    } catch (SQLException e) {
      throw new LedgerException("could not check schema '" + schema + "': " + e.getMessage(), e);
    }
    for (int shard = 0; shard < config.shards(); shard++) {
      String key = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, shard);
      if (redis.exists(key)) {
        throw new LedgerException("Redis already holds stream '" + key + "'; the benchmark needs fresh keys (pass"
            + " another --key-prefix)");
      }
    }
  }

  /** Drops an auxiliary schema and its keys, migrates it anew and seeds it with {@code history}. */
  void prepareAux(String schema, String prefix, History history) {
    sql().exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    deleteKeys(prefix + ":*");
    LedgerMigrations.migrate(dataSource, schema);
    if (history != History.NONE) {
      seedHistory(schema, history == History.WITHOUT_OUTBOX_ROWS);
    }
    if (!config.serverCheckpoints()) {
      checkpoint(dataSource);
    }
  }

  /**
   * Forces a checkpoint, so that the run about to start does not begin in the middle of one, nor meet the one its
   * predecessor's WAL made due (about every 540 MB at the default {@code max_wal_size}, two minutes at 2,000
   * payments/s): each run, handoff's and raw's alike, starts right after one, every page it touches first writes a
   * full image, and no checkpoint lands inside it unless the run itself writes that much WAL. Without it, the runs
   * that met a checkpoint in progress were the slowest of their sets, handoff's more than raw's
   * (docs/performance.md, "Checkpoints"). Returns {@code null} when done, else why not (a role without the right to,
   * on a server of the user's own), which the report states.
   */
  static String checkpoint(DataSource dataSource) {
    try {
      new Sql(dataSource, "benchmark").exec("CHECKPOINT");
      return null;
    } catch (IllegalStateException e) {
      return e.getCause() == null ? e.getMessage() : e.getCause().getMessage();
    }
  }

  /**
   * Settled payments from before the run (payment, charge, inbox marker and, unless {@code emptyOutbox}, their
   * published outbox rows, as a relay leaves them until retention purges them), analysed, so that the run starts
   * where a service that has been running would: with statistics that describe its tables. On tables created a
   * second earlier PostgreSQL plans with guesses until autovacuum's first ANALYZE (up to a minute), and a plan
   * cached from those guesses (a hash join over a "tiny" payment table) can cost O(table) per batch for the whole
   * run. The relay protects itself from this (it plans each time while the outbox is small); the sample ledger's
   * own queries do not.
   */
  void seedHistory(String schema, boolean emptyOutbox) {
    String ids = " FROM generate_series(1, " + Bench.HISTORY + ") i";
    sql().exec("INSERT INTO " + schema + ".payment (payment_id, account, amount_cents, created_at)"
        + " SELECT 'history-' || i, 'acct-' || (i % 1000 + 1), 1250, now() - interval '1 day'" + ids);
    sql().exec("WITH h AS (SELECT 'history-' || i AS payment_id, gen_random_uuid() AS message_id" + ids + "),"
        + " m AS (INSERT INTO " + schema + ".inbox (consumer_group, message_id, stream_id, processed_at)"
        + " SELECT '" + LedgerConsumer.DEFAULT_GROUP + "', message_id, NULL, now() - interval '1 day' FROM h)"
        + " INSERT INTO " + schema + ".charge (ledger, payment_id, message_id, amount_cents, charged_at)"
        + " SELECT '" + LedgerConsumer.DEFAULT_GROUP + "', payment_id, message_id, 1250, now() - interval '1 day'"
        + " FROM h");
    if (!emptyOutbox) {
      // Published an hour ago: inside the default retention (7 days), so the relay keeps them through the run.
      retain(schema, Bench.HISTORY);
    }
    sql().exec("VACUUM ANALYZE " + schema + ".payment, " + schema + ".charge, " + schema + ".inbox, " + schema
        + ".outbox");
  }

  /** Published rows as a relay leaves them, inserted in one statement, then VACUUM ANALYZE. */
  void retain(String schema, long rows) {
    sql().exec("INSERT INTO " + schema + ".outbox (message_id, topic, shard, message_key, type, payload, headers,"
        + " created_at, stream_ms, stream_seq, published_at)"
        + " SELECT gen_random_uuid(), '" + PaymentEvents.TOPIC + "', i % " + config.shards() + ", 'old-' || i, '"
        + PaymentEvents.CREATED + "', convert_to('{\"payment_id\":\"old-' || i || '\",\"account\":\"acct-'"
        + " || (i % 1000 + 1) || '\",\"amount_cents\":1250}', 'UTF8'), '{\"content-type\":\"application/json\"}',"
        + " now() - interval '1 hour', 1, i, now() - interval '1 hour' FROM generate_series(1, " + rows + ") i");
    sql().exec("VACUUM ANALYZE " + schema + ".outbox");
  }

  /** Drops an auxiliary schema and its keys, unless {@code --keep}. */
  void cleanUp(String schema, String prefix) {
    if (!config.keep()) {
      sql().exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      deleteKeys(prefix + ":*");
    }
  }

  void deleteKeys(String pattern) {
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = redis.scan(cursor, new ScanParams().match(pattern).count(1000));
      if (!page.getResult().isEmpty()) {
        redis.del(page.getResult().toArray(String[]::new));
      }
      cursor = page.getCursor();
    } while (!"0".equals(cursor));
  }
}
