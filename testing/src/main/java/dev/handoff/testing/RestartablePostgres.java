package dev.handoff.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * An embedded PostgreSQL server of a test's own (zonky's binaries, the same as the shared one), on one port and one
 * data directory for its whole life, so that {@link #restart()} is a real restart: every session ends, committed
 * data stays, and clients reconnect to the same address.
 */
public final class RestartablePostgres implements AutoCloseable {

  private final int port;
  private final Path dataDirectory;
  private EmbeddedPostgres server;

  private RestartablePostgres(int port, Path dataDirectory) {
    this.port = port;
    this.dataDirectory = dataDirectory;
  }

  /** Starts a new server on a free port with a new data directory. */
  public static RestartablePostgres start() {
    try {
      RestartablePostgres pg = new RestartablePostgres(freePort(), Files.createTempDirectory("handoff-test-pg"));
      pg.startServer();
      return pg;
    } catch (IOException e) {
      throw new UncheckedIOException("could not create a data directory", e);
    }
  }

  /** The JDBC URL of the {@code postgres} database, user {@code postgres}. */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** A new pool of up to {@code maxConnections} to this server whose search_path is {@code schema}; the caller closes it. */
  public HikariDataSource newDataSource(String schema, int maxConnections) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    config.setSchema(schema);
    config.setMaximumPoolSize(maxConnections);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    return new HikariDataSource(config);
  }

  /** Stops the server (fast shutdown: every session is ended) and starts it again on the same port and data. */
  public synchronized void restart() {
    stopServer();
    startServer();
  }

  @Override
  public synchronized void close() {
    stopServer();
    try (Stream<Path> files = Files.walk(dataDirectory)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory: left for the system to clean
    }
  }

  private void startServer() {
    try {
      server = EmbeddedPostgres.builder()
          .setPGStartupWait(Duration.ofSeconds(60)) // as TestServers': zonky's 10 s is too short on busy cores
          .setPort(port)
          .setDataDirectory(dataDirectory)
          .setCleanDataDirectory(false)
          .setRegisterShutdownHook(true)
          .setServerConfig("fsync", "off")
          .setServerConfig("synchronous_commit", "off")
          .setServerConfig("full_page_writes", "off")
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start PostgreSQL on port " + port, e);
    }
  }

  private void stopServer() {
    if (server != null) {
      try {
        server.close();
      } catch (IOException e) {
        throw new UncheckedIOException("could not stop PostgreSQL on port " + port, e);
      } finally {
        server = null;
      }
    }
  }

  private static int freePort() {
    return FreePorts.take();
  }

}
