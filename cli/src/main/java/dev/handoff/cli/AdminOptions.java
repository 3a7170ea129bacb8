package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.StreamAdmin;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * What {@code rewind} and {@code trim} share: Redis, the database (optional: with it the topic's shards are its
 * {@code relay_lease} rows, else the streams found in Redis), and the count limit.
 */
final class AdminOptions {

  @Mixin
  RedisOptions redis;

  @Mixin
  DatabaseOptions database;

  @Option(names = "--count-limit", defaultValue = "" + StreamAdmin.DEFAULT_COUNT_LIMIT,
      description = "the most entries one count looks at; past it the count says 'at least' (default"
          + " ${DEFAULT-VALUE})")
  int countLimit;

  /** A database pool (or null without --jdbc-url) and the admin on it and Redis; closed together. */
  record Opened(HikariDataSource db, StreamAdmin admin) implements AutoCloseable {
    @Override
    public void close() {
      admin.close();
      if (db != null) {
        db.close();
      }
    }
  }

  Opened open(CommandSpec spec, String poolName) {
    HikariDataSource db = database.jdbcUrl == null || database.jdbcUrl.isBlank() ? null
        : database.open(spec, 1, poolName);
    try {
      StreamAdmin.Builder b = StreamAdmin.builder(redis.awaitReachable(database.connectTimeout()))
          .keyPrefix(redis.keyPrefix()).countLimit(countLimit);
      if (db != null) {
        b.dataSource(db).schema(database.schema());
      }
      return new Opened(db, b.build());
    } catch (RuntimeException e) {
      if (db != null) {
        db.close();
      }
      throw e;
    }
  }
}
