package dev.handoff.benchmarks.ledger;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * The machine, the JVM and the servers the benchmark ran on.
 *
 * @param checkpoints {@code null} when the benchmark forces a checkpoint before each run
 *     ({@link BenchFixtures#checkpoint}), else why it leaves them to the server's schedule
 */
public record Environment(int cores, long memoryBytes, String cpu, String os, String jdk, String jvmArgs,
    long maxHeap, String postgres, Map<String, String> postgresSettings, String checkpoints, String redis,
    String redisSettings, String servers) {

  /**
   * {@code leaveCheckpoints}: why the benchmark leaves checkpoints to the server's schedule, or {@code null} when it
   * forces one before each run, as the server lets it (tried here once).
   */
  static Environment probe(DataSource dataSource, UnifiedJedis redis, String servers, String leaveCheckpoints) {
    long memory = -1;
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
      memory = os.getTotalMemorySize();
    }
    String cpu = "unknown";
    try {
      cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
          .map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst().orElse("unknown");
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    String pg = "unknown";
    Map<String, String> settings = new LinkedHashMap<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT version()")) {
        rs.next();
        pg = rs.getString(1);
      }
      try (ResultSet rs = s.executeQuery("SELECT name, setting, coalesce(unit, '') FROM pg_settings WHERE name IN"
          + " ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections', 'wal_level',"
          + " 'track_commit_timestamp', 'max_wal_size', 'checkpoint_timeout')"
          + " ORDER BY name")) {
        while (rs.next()) {
          settings.put(rs.getString(1), rs.getString(2) + (rs.getString(3).isEmpty() ? "" : " x " + rs.getString(3)));
        }
      }
    } catch (SQLException e) {
      pg = "unknown (" + e.getMessage() + ")";
    }
    String checkpoints = leaveCheckpoints;
    if (checkpoints == null) {
      String refused = BenchFixtures.checkpoint(dataSource);
      checkpoints = refused == null ? null : "`CHECKPOINT` refused: " + refused;
    }
    String redisVersion = "unknown";
    String redisSettings = "";
    try {
      for (String line : redis.info("server").split("\r?\n")) {
        if (line.startsWith("redis_version:")) {
          redisVersion = line.substring("redis_version:".length()).strip();
        }
      }
      StringBuilder b = new StringBuilder();
      for (String key : new String[] {"appendonly", "save", "maxmemory-policy"}) {
        Map<String, String> v = redis.configGet(key);
        b.append(b.length() == 0 ? "" : ", ").append(key).append(' ').append(v.getOrDefault(key, "?").isEmpty()
            ? "\"\"" : v.getOrDefault(key, "?"));
      }
      redisSettings = b.toString();
    } catch (RuntimeException e) {
      redisVersion = "unknown (" + e.getMessage() + ")";
    }
    var runtime = ManagementFactory.getRuntimeMXBean();
    return new Environment(Runtime.getRuntime().availableProcessors(), memory, cpu,
        System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"),
        System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " "
            + System.getProperty("java.runtime.version"),
        String.join(" ", runtime.getInputArguments()), Runtime.getRuntime().maxMemory(), pg, settings, checkpoints,
        redisVersion, redisSettings, servers);
  }

  String oneLine() {
    return String.format("%d cores (%s), %.1f GiB, %s; %s; Redis %s; %s", cores, cpu, memoryBytes / (double) (1L << 30),
        jdk, postgres.replaceAll(",.*", ""), redis, servers);
  }
}
