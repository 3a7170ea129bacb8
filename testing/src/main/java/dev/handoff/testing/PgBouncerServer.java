package dev.handoff.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;

/**
 * A real PgBouncer of a test's own, on a free port, in front of the shared PostgreSQL ({@link TestServers}). The
 * binary is {@code $HANDOFF_PGBOUNCER}, or {@code pgbouncer} in {@code /usr/sbin}, {@code /usr/bin} or
 * {@code /usr/local/bin}; without one the test is skipped by an assumption that says so (CI installs it). PgBouncer
 * refuses to run as root, so as root it runs as the user {@code postgres} (or {@code nobody}) through
 * {@code runuser}; its configuration, log and pid file are in a temporary directory that user owns. Clients need
 * no password ({@code auth_type = any}); PgBouncer logs in to PostgreSQL as the shared server's user.
 */
public final class PgBouncerServer implements AutoCloseable {

  /** PgBouncer's {@code pool_mode}. */
  public enum PoolMode {
    /** A server session per client connection, for as long as the client is connected: LISTEN works. */
    SESSION,
    /** A server session per transaction: session state (named prepared statements, LISTEN, SET) is not kept. */
    TRANSACTION
  }

  private static final Pattern JDBC_URL =
      Pattern.compile("jdbc:postgresql://([^:/?]+)(?::(\\d+))?/([^?]+)(?:\\?(.*))?");
  private static final String DATABASE = "handoff";
  private static final String AS = "_as_";

  private final PoolMode mode;
  private final int port;
  private final Path dir;
  private final Process process;

  private PgBouncerServer(PoolMode mode, int port, Path dir, Process process) {
    this.mode = mode;
    this.port = port;
    this.dir = dir;
    this.process = process;
  }

  /** Starts PgBouncer in {@code mode}, or skips the calling test when no PgBouncer binary is installed. */
  public static PgBouncerServer start(PoolMode mode) {
    return start(mode, new String[0]);
  }

  /**
   * Starts PgBouncer in {@code mode} with, besides its database, one that logs in as each of {@code roles} (see
   * {@link #jdbcUrlAs}); skips the calling test when no PgBouncer binary is installed.
   */
  public static PgBouncerServer start(PoolMode mode, String... roles) {
    Path binary = binary();
    Assumptions.assumeTrue(binary != null, "PgBouncer is not installed (no pgbouncer in /usr/sbin, /usr/bin,"
        + " /usr/local/bin, and HANDOFF_PGBOUNCER is not set): apt-get install pgbouncer");
    try {
      return launch(binary, mode, roles);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start PgBouncer " + binary, e);
    }
  }

  public PoolMode mode() {
    return mode;
  }

  public int port() {
    return port;
  }

  /** A JDBC URL through this PgBouncer, without any setting of its own (pgjdbc's defaults). */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + DATABASE + "?user=" + upstream().user;
  }

  /**
   * A JDBC URL through this PgBouncer to the database it logs in to PostgreSQL as {@code role} (one of those it was
   * {@linkplain #start(PoolMode, String...) started with}), as a least-privilege component connects, with pgjdbc's
   * defaults. With {@code auth_type = any} PgBouncer needs each database's server user fixed in its config.
   */
  public String jdbcUrlAs(String role) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + DATABASE + AS + role + "?user=" + role;
  }

  private static String roleDatabases(Upstream up, String... roles) {
    StringBuilder out = new StringBuilder();
    for (String role : roles) {
      out.append(DATABASE).append(AS).append(role).append(" = host=").append(up.host).append(" port=")
          .append(up.port).append(" dbname=").append(up.database).append(" user=").append(role).append('\n');
    }
    return out.toString();
  }

  /**
   * A new pool of up to {@code maxConnections} through this PgBouncer, with pgjdbc's defaults plus
   * {@code properties} (such as {@code "prepareThreshold", "0"}, in pairs). The caller closes it.
   */
  public HikariDataSource newDataSource(int maxConnections, String... properties) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl());
    for (int i = 0; i + 1 < properties.length; i += 2) {
      config.addDataSourceProperty(properties[i], properties[i + 1]);
    }
    config.setMaximumPoolSize(maxConnections);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    config.setPoolName("pgbouncer-" + mode.name().toLowerCase(Locale.ROOT) + "-" + port);
    return new HikariDataSource(config);
  }

  /** What PgBouncer logged so far. */
  public String log() {
    try {
      Path log = dir.resolve("pgbouncer.log");
      return Files.exists(log) ? Files.readString(log) : "";
    } catch (IOException e) {
      return "(log unreadable: " + e + ")";
    }
  }

  /** Stops PgBouncer (SIGTERM, then SIGKILL after 5 s) and deletes its directory. */
  @Override
  public void close() {
    pgbouncerPid().flatMap(ProcessHandle::of).ifPresent(ProcessHandle::destroy);
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        pgbouncerPid().flatMap(ProcessHandle::of).ifPresent(ProcessHandle::destroyForcibly);
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        Files.deleteIfExists(f);
      }
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temporary directory; nothing else depends on it
    }
  }

  private Optional<Long> pgbouncerPid() {
    try {
      Path pidFile = dir.resolve("pgbouncer.pid");
      return Files.exists(pidFile)
          ? Optional.of(Long.parseLong(Files.readString(pidFile).trim()))
          : Optional.empty();
    } catch (IOException | NumberFormatException e) {
      return Optional.empty();
    }
  }

  private record Upstream(String host, int port, String database, String user, String password) {}

  private static Upstream upstream() {
    TestServers.Postgres pg = TestServers.postgres();
    Matcher m = JDBC_URL.matcher(pg.jdbcUrl());
    if (!m.matches()) {
      throw new IllegalStateException("cannot put PgBouncer in front of " + pg.jdbcUrl());
    }
    String user = pg.user();
    String password = pg.password();
    if (m.group(4) != null) {
      for (String param : m.group(4).split("&")) {
        String[] kv = param.split("=", 2);
        if (kv.length == 2 && kv[0].equals("user") && user == null) {
          user = kv[1];
        } else if (kv.length == 2 && kv[0].equals("password") && password == null) {
          password = kv[1];
        }
      }
    }
    String host = m.group(1).equals("localhost") ? "127.0.0.1" : m.group(1);
    return new Upstream(host, m.group(2) == null ? 5432 : Integer.parseInt(m.group(2)), m.group(3),
        user == null ? "postgres" : user, password);
  }

  private static PgBouncerServer launch(Path binary, PoolMode mode, String... roles) throws IOException {
    Upstream up = upstream();
    int port = freePort();
    Path dir = Files.createTempDirectory("handoff-pgbouncer-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    boolean root = "root".equals(System.getProperty("user.name"));
    String ini = "[databases]\n"
        + DATABASE + " = host=" + up.host + " port=" + up.port + " dbname=" + up.database + " user=" + up.user
        + (up.password != null ? " password=" + up.password : "") + "\n"
        + roleDatabases(up, roles)
        + "[pgbouncer]\n"
        + "listen_addr = 127.0.0.1\n"
        + "listen_port = " + port + "\n"
        + "unix_socket_dir =\n"
        + "auth_type = any\n"
        + "pool_mode = " + mode.name().toLowerCase(Locale.ROOT) + "\n"
        + "max_client_conn = 500\n"
        + "default_pool_size = 20\n"
        + "logfile = " + dir.resolve("pgbouncer.log") + "\n"
        + "pidfile = " + dir.resolve("pgbouncer.pid") + "\n";
    Path config = dir.resolve("pgbouncer.ini");
    Files.writeString(config, ini, StandardCharsets.UTF_8);
    List<String> command = new ArrayList<>();
    if (root) {
      // PgBouncer refuses to run as root; its files must belong to the user it runs as.
      String user = "postgres";
      UserPrincipal owner;
      try {
        owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
      } catch (UserPrincipalNotFoundException e) {
        user = "nobody"; // Debian's package runs it as postgres, which a bare machine may lack
        owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
      }
      Files.setOwner(dir, owner);
      Files.setOwner(config, owner);
      command.addAll(List.of("runuser", "-u", user, "--"));
    }
    command.add(binary.toString());
    command.add(config.toString());
    Process process = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
    PgBouncerServer server = new PgBouncerServer(mode, port, dir, process);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!accepts(port)) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        String log = server.log();
        server.close();
        throw new IllegalStateException("PgBouncer did not start on port " + port + " (" + String.join(" ", command)
            + "): " + log);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        server.close();
        throw new IllegalStateException("interrupted while PgBouncer started", e);
      }
    }
    return server;
  }

  private static boolean accepts(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static Path binary() {
    String configured = System.getenv("HANDOFF_PGBOUNCER");
    if (configured != null && !configured.isBlank()) {
      Path p = Path.of(configured);
      return Files.isExecutable(p) ? p : null;
    }
    for (String d : new String[] {"/usr/sbin", "/usr/bin", "/usr/local/bin"}) {
      Path p = Path.of(d, "pgbouncer");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  private static int freePort() {
    return FreePorts.take();
  }

}
