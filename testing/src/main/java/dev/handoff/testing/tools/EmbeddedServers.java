package dev.handoff.testing.tools;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import redis.embedded.RedisServer;

/**
 * A throwaway PostgreSQL (zonky's embedded binaries) and Redis 7.0.15 (org.signal's) for the demo, so that it runs
 * on a machine with nothing but a JDK. Redis keeps nothing on disk ({@code save ""}, {@code appendonly no}) and
 * refuses writes rather than evicting ({@code noeviction}). PostgreSQL is either durable, with the production
 * defaults ({@code fsync}, {@code synchronous_commit} and {@code full_page_writes} on), or, for a fast demo, without
 * them. Closing stops both.
 */
public final class EmbeddedServers implements AutoCloseable {

  private final EmbeddedPostgres postgres;
  private final RedisServer redis;
  private final int redisPort;

  private EmbeddedServers(EmbeddedPostgres postgres, RedisServer redis, int redisPort) {
    this.postgres = postgres;
    this.redis = redis;
    this.redisPort = redisPort;
  }

  /** Starts whichever servers are wanted, PostgreSQL without fsync: for the demo, not for measuring. */
  public static EmbeddedServers start(boolean wantPostgres, boolean wantRedis) {
    return start(wantPostgres, wantRedis, false);
  }

  /**
   * Starts whichever servers are wanted; {@code durable} runs PostgreSQL with the production defaults, otherwise with
   * {@code fsync}, {@code synchronous_commit} and {@code full_page_writes} off.
   */
  public static EmbeddedServers start(boolean wantPostgres, boolean wantRedis, boolean durable) {
    EmbeddedPostgres pg = null;
    RedisServer server = null;
    int port = -1;
    try {
      if (wantPostgres) {
        String onOff = durable ? "on" : "off";
        pg = EmbeddedPostgres.builder()
            .setPGStartupWait(Duration.ofSeconds(60)) // zonky's 10 s is too short on a busy two-core machine
            .setServerConfig("fsync", onOff)
            .setServerConfig("synchronous_commit", onOff)
            .setServerConfig("full_page_writes", onOff)
            .setServerConfig("max_connections", "300")
            // The bench reads where a row waited between two commits from these (RowWaits).
            .setServerConfig("track_commit_timestamp", "on")
            .start();
      }
      if (wantRedis) {
        port = freePort();
        server = RedisServer.builder()
            .port(port)
            .setting("bind 127.0.0.1")
            .setting("save \"\"")
            .setting("appendonly no")
            .setting("maxmemory-policy noeviction")
            .build();
        server.start();
      }
      return new EmbeddedServers(pg, server, port);
    } catch (IOException | RuntimeException e) {
      closeQuietly(pg);
      throw new IllegalStateException("could not start the embedded servers: " + e.getMessage(), e);
    }
  }

  /** The JDBC URL of the embedded PostgreSQL, or null if it was not started. */
  public String jdbcUrl() {
    return postgres == null ? null : postgres.getJdbcUrl("postgres", "postgres");
  }

  /** The URL of the embedded Redis, or null if it was not started. */
  public String redisUrl() {
    return redis == null ? null : "redis://127.0.0.1:" + redisPort;
  }

  public String describe() {
    StringBuilder b = new StringBuilder();
    if (postgres != null) {
      b.append("embedded PostgreSQL 17 on port ").append(postgres.getPort());
    }
    if (redis != null) {
      b.append(b.length() == 0 ? "" : " and ").append("embedded Redis 7.0.15 on port ").append(redisPort)
          .append(" (no persistence)");
    }
    return b.toString();
  }

  @Override
  public void close() {
    if (redis != null) {
      try {
        redis.stop();
      } catch (RuntimeException e) {
        // the demo is over; nothing useful to do
      }
    }
    closeQuietly(postgres);
  }

  private static void closeQuietly(EmbeddedPostgres pg) {
    if (pg != null) {
      try {
        pg.close();
      } catch (IOException e) {
        // the demo is over; nothing useful to do
      }
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
