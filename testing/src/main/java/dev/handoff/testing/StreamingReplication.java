package dev.handoff.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A PostgreSQL primary and a streaming standby of a test's own, for failover tests: the primary is killed (SIGKILL,
 * as a crashed machine), the standby promoted, and clients on a multi-host URL follow. Asynchronous by default;
 * {@link #startSynchronous()} makes every commit wait for the standby. The binaries are those of a PostgreSQL
 * server package ({@code $HANDOFF_PG_BINDIR}, or {@code /usr/lib/postgresql/<version>/bin} with {@code initdb} and
 * {@code pg_basebackup}); without them the calling test is skipped by an assumption that says so. {@code initdb}
 * refuses root, so as root the servers run as the user {@code postgres} through {@code runuser}. Both data
 * directories live in one temporary directory, deleted by {@link #close()}.
 */
public final class StreamingReplication implements AutoCloseable {

  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private final Path bin;
  private final Path dir;
  private final String runAs;
  private final int primaryPort;
  private final int standbyPort;
  private boolean primaryKilled;

  private StreamingReplication(Path bin, Path dir, String runAs, int primaryPort, int standbyPort) {
    this.bin = bin;
    this.dir = dir;
    this.runAs = runAs;
    this.primaryPort = primaryPort;
    this.standbyPort = standbyPort;
  }

  /** A primary and an asynchronous standby that has replayed everything the primary had when this returns. */
  public static StreamingReplication start() {
    return launch(false);
  }

  /**
   * A primary and a synchronous standby: {@code synchronous_standby_names = '*'} is set on the primary alone, after
   * the base backup, so that the promoted standby does not wait for a standby of its own.
   */
  public static StreamingReplication startSynchronous() {
    return launch(true);
  }

  /** The URL every client uses: both servers, the one that accepts writes first. */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + primaryPort + ",127.0.0.1:" + standbyPort
        + "/postgres?user=postgres&targetServerType=primary&connectTimeout=2&socketTimeout=10";
  }

  /** Stops the primary's WAL sender with SIGSTOP: the standby receives nothing more until {@link #resumeWalSender}. */
  public long pauseWalSender() {
    long pid = queryLong(primaryPort, "SELECT pid FROM pg_stat_replication");
    signal("STOP", pid);
    return pid;
  }

  /** SIGCONTs the WAL sender {@link #pauseWalSender} stopped. */
  public void resumeWalSender(long pid) {
    signal("CONT", pid);
  }

  /** Waits until the standby has replayed everything the primary has written. */
  public void awaitStandbyCaughtUp() {
    String target = queryText(primaryPort, "SELECT pg_current_wal_lsn()::text");
    await("the standby to replay up to " + target, () -> queryLong(standbyPort,
        "SELECT CASE WHEN pg_last_wal_replay_lsn() >= '" + target + "'::pg_lsn THEN 1 ELSE 0 END") == 1);
  }

  /** SIGKILLs the primary's postmaster and every one of its processes at once, as a crashed machine would. */
  public void killPrimary() {
    Path pidFile = dir.resolve("primary").resolve("postmaster.pid");
    long postmaster;
    try {
      postmaster = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
    } catch (IOException e) {
      throw new UncheckedIOException("no postmaster.pid for the primary", e);
    }
    List<String> command = new ArrayList<>(List.of("kill", "-KILL", Long.toString(postmaster)));
    ProcessHandle.of(postmaster).ifPresent(p -> p.children().forEach(c -> command.add(Long.toString(c.pid()))));
    run(command, false);
    primaryKilled = true;
    await("the primary's processes to die", () -> ProcessHandle.of(postmaster).isEmpty()
        || !ProcessHandle.of(postmaster).get().isAlive());
  }

  /** Promotes the standby and waits until it accepts writes. */
  public void promoteStandby() {
    run(asServerUser(bin.resolve("pg_ctl").toString(), "promote", "-w", "-t", "60", "-D",
        dir.resolve("standby").toString()), true);
    await("the standby to leave recovery",
        () -> queryLong(standbyPort, "SELECT CASE WHEN pg_is_in_recovery() THEN 0 ELSE 1 END") == 1);
  }

  /** The timeline the standby is on: it changes when it is promoted. */
  public long standbyTimeline() {
    return queryLong(standbyPort, "SELECT timeline_id FROM pg_control_checkpoint()");
  }

  /** Stops both servers at once and deletes their directories. */
  @Override
  public void close() {
    for (String server : List.of("primary", "standby")) {
      if (server.equals("primary") && primaryKilled) {
        continue;
      }
      try {
        run(asServerUser(bin.resolve("pg_ctl").toString(), "stop", "-m", "immediate", "-w", "-D",
            dir.resolve(server).toString()), false);
      } catch (RuntimeException e) {
        // already stopped
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      // a temporary directory; nothing depends on it
    }
  }

  private static StreamingReplication launch(boolean synchronous) {
    Path bin = binaries();
    Assumptions.assumeTrue(bin != null, "no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup in"
        + " /usr/lib/postgresql/<version>/bin, and HANDOFF_PG_BINDIR is not set): apt-get install postgresql");
    boolean root = "root".equals(System.getProperty("user.name"));
    Path dir;
    try {
      dir = Files.createTempDirectory("handoff-replication-");
      if (root) {
        UserPrincipal owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
        Files.setOwner(dir, owner);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not create the servers' directory", e);
    }
    StreamingReplication r = new StreamingReplication(bin, dir, root ? "postgres" : null, FreePorts.take(),
        FreePorts.take());
    try {
      r.startPrimary();
      r.startStandby();
      if (synchronous) {
        r.execute(r.primaryPort, "ALTER SYSTEM SET synchronous_standby_names = '*'");
        r.execute(r.primaryPort, "SELECT pg_reload_conf()");
        r.await("the standby to be synchronous", () -> r.queryLong(r.primaryPort,
            "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1);
      }
      r.awaitStandbyCaughtUp();
      return r;
    } catch (RuntimeException e) {
      r.close();
      throw e;
    }
  }

  private void startPrimary() {
    Path data = dir.resolve("primary");
    run(asServerUser(bin.resolve("initdb").toString(), "-D", data.toString(), "-U", "postgres", "--auth=trust",
        "-E", "UTF8", "--no-sync"), true);
    appendConfig(data, "port = " + primaryPort + "\nlisten_addresses = '127.0.0.1'\n"
        + "unix_socket_directories = '" + dir + "'\nwal_level = replica\nmax_wal_senders = 4\n"
        + "fsync = off\nmax_connections = 60\n");
    startServer("primary");
  }

  private void startStandby() {
    Path data = dir.resolve("standby");
    run(asServerUser(bin.resolve("pg_basebackup").toString(), "-D", data.toString(), "-R", "-X", "stream",
        "-h", "127.0.0.1", "-p", Integer.toString(primaryPort), "-U", "postgres"), true);
    appendConfig(data, "port = " + standbyPort + "\n");
    startServer("standby");
  }

  private void startServer(String name) {
    run(asServerUser(bin.resolve("pg_ctl").toString(), "start", "-w", "-t", "60", "-D",
        dir.resolve(name).toString(), "-l", dir.resolve(name + ".log").toString()), true);
  }

  private void appendConfig(Path data, String lines) {
    // Written by whoever runs the test: the file belongs to the server's user, who can still read it.
    try {
      Files.writeString(data.resolve("postgresql.conf"), lines, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException("could not configure " + data, e);
    }
  }

  private List<String> asServerUser(String... command) {
    List<String> out = new ArrayList<>();
    if (runAs != null) {
      out.addAll(List.of("runuser", "-u", runAs, "--"));
    }
    out.addAll(List.of(command));
    return out;
  }

  private void signal(String signal, long pid) {
    run(List.of("kill", "-" + signal, Long.toString(pid)), true);
  }

  private void run(List<String> command, boolean mustSucceed) {
    try {
      Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish in 90 s");
      }
      if (mustSucceed && p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " exited " + p.exitValue() + ": " + output
            + logs());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not run " + String.join(" ", command), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + String.join(" ", command), e);
    }
  }

  private String logs() {
    StringBuilder out = new StringBuilder();
    for (String name : List.of("primary", "standby")) {
      Path log = dir.resolve(name + ".log");
      try {
        if (Files.exists(log)) {
          out.append("\n--- ").append(name).append(".log:\n").append(Files.readString(log));
        }
      } catch (IOException e) {
        out.append("\n(").append(log).append(" unreadable)");
      }
    }
    return out.toString();
  }

  private void execute(int port, String sql) {
    try (Connection c = connect(port); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("on port " + port + ": " + sql, e);
    }
  }

  private long queryLong(int port, String sql) {
    return Long.parseLong(queryText(port, sql));
  }

  private String queryText(int port, String sql) {
    try (Connection c = connect(port); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      if (!rs.next()) {
        throw new IllegalStateException("no row from port " + port + ": " + sql);
      }
      return rs.getString(1);
    } catch (SQLException e) {
      throw new IllegalStateException("on port " + port + ": " + sql, e);
    }
  }

  private static Connection connect(int port) throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres");
  }

  private void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + DEADLINE.toNanos();
    while (true) {
      try {
        if (condition.getAsBoolean()) {
          return;
        }
      } catch (RuntimeException e) {
        // not there yet (a server still starting)
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("timed out after " + DEADLINE.toSeconds() + " s waiting for " + what
            + logs());
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for " + what, e);
      }
    }
  }

  private static Path binaries() {
    String fromEnv = System.getenv("HANDOFF_PG_BINDIR");
    if (fromEnv != null && !fromEnv.isBlank()) {
      Path p = Path.of(fromEnv);
      return complete(p) ? p : null;
    }
    Path root = Path.of("/usr/lib/postgresql");
    if (!Files.isDirectory(root)) {
      return null;
    }
    try (Stream<Path> versions = Files.list(root)) {
      return versions.map(v -> v.resolve("bin")).filter(StreamingReplication::complete)
          .max(Comparator.comparing(Path::toString)).orElse(null);
    } catch (IOException e) {
      return null;
    }
  }

  private static boolean complete(Path bin) {
    return Stream.of("initdb", "pg_ctl", "pg_basebackup", "postgres")
        .allMatch(name -> Files.isExecutable(bin.resolve(name)));
  }
}
