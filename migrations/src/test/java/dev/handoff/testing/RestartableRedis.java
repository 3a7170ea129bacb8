package dev.handoff.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import redis.embedded.RedisServer;

/**
 * A Redis 7.0.15 server of a test's own, on a fixed random port, that keeps nothing on disk. Stopping and starting
 * it again is a real "Redis restarted without persistence" fault: streams, groups and scripts are gone.
 */
public final class RestartableRedis implements AutoCloseable {

  private final int port;
  private RedisServer server;

  private RestartableRedis(int port) {
    this.port = port;
  }

  /** Starts a new server on a free port. */
  public static RestartableRedis start() {
    RestartableRedis redis = new RestartableRedis(freePort());
    redis.startServer();
    return redis;
  }

  public int port() {
    return port;
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

  private synchronized void startServer() {
    if (server != null) {
      return;
    }
    RedisServer s =
          RedisServer.builder()
              .port(port)
              .setting("bind 127.0.0.1")
              .setting("save \"\"")
              .setting("appendonly no")
              .setting("maxmemory-policy noeviction")
              .build();
    s.start();
    server = s;
  }

  @Override
  public void close() {
    stop();
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
