package dev.handoff.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * One {@code redis-server} process of a {@link RedisCluster}, started directly (not through embedded-redis's
 * {@code RedisServer}) so that the test holds its {@link Process} and can SIGKILL it.
 */
final class ClusterNode {

  /** The cluster bus listens on the client port plus this offset; both must be free. */

  private final HostAndPort address;
  private final Process process;
  private String id;

  private ClusterNode(HostAndPort address, Process process) {
    this.address = address;
    this.process = process;
  }

  /** Starts one cluster-enabled, persistence-free server in {@code dir} and waits until it answers PING. */
  static ClusterNode start(File binary, Path dir, Duration nodeTimeout) {
    int port = freePortWithFreeBus();
    List<String> command = new ArrayList<>(List.of(binary.getAbsolutePath(),
        "--port", Integer.toString(port),
        "--bind", "127.0.0.1",
        "--dir", dir.toString(),
        "--cluster-enabled", "yes",
        "--cluster-config-file", "nodes-" + port + ".conf",
        "--cluster-node-timeout", Long.toString(nodeTimeout.toMillis()),
        // A replica of a SIGKILLed master must take over however long ago it last heard from it.
        "--cluster-replica-validity-factor", "0",
        // The test decides where every replica is; Redis must not move one to an orphaned master on its own.
        "--cluster-allow-replica-migration", "no",
        // A replica's first full sync would otherwise wait 5 s for more replicas to share it: none ever comes.
        "--repl-diskless-sync-delay", "0",
        "--save", "",
        "--appendonly", "no",
        "--maxmemory-policy", "noeviction"));
    ProcessBuilder builder = new ProcessBuilder(command)
        .directory(dir.toFile())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis-" + port + ".log").toFile()));
    Process process;
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + binary + " on port " + port, e);
    }
    ClusterNode node = new ClusterNode(new HostAndPort("127.0.0.1", port), process);
    try {
      Waits.until("node " + node.address + " answers PING", Duration.ofSeconds(20), node::answersPing);
      try (Jedis jedis = node.admin()) {
        node.id = jedis.clusterMyId();
      }
    } catch (RuntimeException e) {
      node.kill();
      throw e;
    }
    return node;
  }

  HostAndPort address() {
    return address;
  }

  /** The node's cluster ID (fixed for its life). */
  String id() {
    return id;
  }

  long pid() {
    return process.pid();
  }

  boolean alive() {
    return process.isAlive();
  }

  /** A new plain connection to this node alone (no redirections followed). */
  Jedis admin() {
    return new Jedis(address.getHost(), address.getPort(), 5000);
  }

  /** SIGKILL (no shutdown, no save), and waits until the process is gone. */
  /** Sends {@code signal} (such as {@code STOP} or {@code CONT}) to the node's process with kill(1). */
  void signal(String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
      }
    } catch (java.io.IOException e) {
      throw new IllegalStateException("could not run kill -" + signal + " " + process.pid(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending " + signal + " to pid " + process.pid(), e);
    }
  }

  void kill() {
    process.destroyForcibly();
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("redis-server pid " + process.pid() + " did not die after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while killing redis-server pid " + process.pid(), e);
    }
  }

  private boolean answersPing() {
    if (!process.isAlive()) {
      throw new IllegalStateException("redis-server on port " + address.getPort() + " exited with "
          + process.exitValue() + " (see its log in the cluster's directory)");
    }
    try (Jedis jedis = admin()) {
      return "PONG".equals(jedis.ping());
    } catch (JedisConnectionException e) {
      return false;
    }
  }

  private static int freePortWithFreeBus() {
    return FreePorts.takeWithBus();
  }


  @Override
  public String toString() {
    return address + " (" + id + ")";
  }
}
