package dev.handoff.testing;

import dev.handoff.core.RedisConnectionSpec;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import redis.clients.jedis.Jedis;
import redis.embedded.RedisServer;
import redis.embedded.RedisServerBuilder;

/**
 * A Redis 7.0.15 server of a test's own, on a fixed random port, that keeps nothing on disk. Stopping and starting
 * it again is a real "Redis restarted without persistence" fault: streams, groups and scripts are gone.
 *
 * <p>One started with {@link #startWithSnapshots(Path)} writes a snapshot only when asked ({@link #snapshot()}) and
 * loads the last one when it starts again: {@link #killAndRestartFromSnapshot()} is a partial loss, Redis coming
 * back with older data than it had when it died.
 */
public final class RestartableRedis implements AutoCloseable {

  private final int port;
  private final Path snapshotDir;
  private RedisServer server;

  private RestartableRedis(int port, Path snapshotDir) {
    this.port = port;
    this.snapshotDir = snapshotDir;
  }

  /** Starts a new server on a free port. */
  public static RestartableRedis start() {
    RestartableRedis redis = new RestartableRedis(freePort(), null);
    redis.startServer();
    return redis;
  }

  /** Starts a new server on a free port that keeps its snapshots ({@code dump.rdb}) in {@code dir}. */
  public static RestartableRedis startWithSnapshots(Path dir) {
    RestartableRedis redis = new RestartableRedis(freePort(), dir.toAbsolutePath());
    redis.startServer();
    return redis;
  }

  public int port() {
    return port;
  }

  /** How handoff's builders reach this server. */
  public RedisConnectionSpec spec() {
    return RedisConnectionSpec.of(uri());
  }

  public URI uri() {
    return URI.create("redis://127.0.0.1:" + port);
  }

  /** Stops the server; clients see connection errors until {@link #startAgain()}. */
  public synchronized void stop() {
    if (server != null) {
      server.stop();
      server = null;
    }
  }

  /** Starts the server again on the same port, empty. */
  public synchronized void startAgain() {
    startServer();
  }

  /** Stops and starts the server: everything it held is lost. */
  public void restart() {
    stop();
    startAgain();
  }

  /** Writes a snapshot with {@code BGSAVE} and returns once it is complete on disk. */
  public void snapshot() {
    requireSnapshots();
    try (Jedis jedis = new Jedis("127.0.0.1", port)) {
      jedis.bgsave();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (persistence(jedis).contains("rdb_bgsave_in_progress:1")) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("BGSAVE did not finish within 30 s");
        }
        Thread.onSpinWait();
      }
      if (!persistence(jedis).contains("rdb_last_bgsave_status:ok")) {
        throw new IllegalStateException("BGSAVE failed: " + persistence(jedis));
      }
    }
  }

  /**
   * Kills the server with SIGKILL (no shutdown, no save) and starts it again on the same port, loading the last
   * {@link #snapshot()}: whatever was written after that snapshot is gone.
   */
  public synchronized void killAndRestartFromSnapshot() {
    requireSnapshots();
    long pid;
    try (Jedis jedis = new Jedis("127.0.0.1", port)) {
      pid = Long.parseLong(jedis.info("server").lines().filter(l -> l.startsWith("process_id:")).findFirst()
          .orElseThrow().substring("process_id:".length()).trim());
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    process.ifPresent(ProcessHandle::destroyForcibly);
    process.ifPresent(p -> p.onExit().join());
    server.stop(); // the process is gone already; this only resets the embedded server's state
    server = null;
    startServer();
  }

  private void requireSnapshots() {
    if (snapshotDir == null) {
      throw new IllegalStateException("this server was started without a snapshot directory");
    }
  }

  private static String persistence(Jedis jedis) {
    return jedis.info("persistence");
  }

  private synchronized void startServer() {
    if (server != null) {
      return;
    }
    RedisServerBuilder builder =
          RedisServer.builder()
              .port(port)
              .setting("bind 127.0.0.1")
              .setting("save \"\"")
              .setting("appendonly no")
              .setting("maxmemory-policy noeviction");
    if (snapshotDir != null) {
      builder.setting("dir " + snapshotDir).setting("dbfilename dump.rdb");
    }
    RedisServer s = builder.build();
    s.start();
    server = s;
  }

  @Override
  public void close() {
    stop();
  }

  private static int freePort() {
    return FreePorts.take();
  }

}
