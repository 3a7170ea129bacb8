package dev.handoff.benchmarks.ledger;

import dev.handoff.ledger.LedgerException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/**
 * The application's producers on CPUs of their own ({@code --pin-producers}): the producer processes and their
 * PostgreSQL backends on the first half of the machine's CPUs, everything else (this JVM with the relay and the
 * consumers, Redis, the postmaster with every other backend and PostgreSQL's own processes) on the second half.
 *
 * <p>On a small machine every process shares the same cores, so the producer side of a flat-out run measures the
 * share of CPU the relay and the consumers take, not what the append costs the application. In production the
 * relay and the consumers run elsewhere; with the producers pinned, the payment transactions alone and with each
 * pipeline's row get the same CPUs, and what they share with the rest is the database's own work (its WAL flush,
 * its locks, its buffers). Uses {@code taskset}; needs PostgreSQL and Redis on this machine and at least two CPUs.
 * New backends are forked by the postmaster and inherit its CPUs; a producer process moves its own backends once its
 * pool is full ({@link #pinBackends}).
 */
public final class CpuPinning implements AutoCloseable {

  /** The system property that tells a producer process which CPUs its backends go to. */
  static final String PRODUCER_CPUS = "handoff.bench.producer-cpus";

  /**
   * The two halves of this machine's CPUs, as {@code taskset -c} takes them: read before anything is pinned, since a
   * pinned JVM sees only its own CPUs.
   */
  public record Split(String producerCpus, String otherCpus, String allCpus) {

    /** {@code command} run on the producers' CPUs, told where their backends go. */
    List<String> onProducerCpus(List<String> java, List<String> rest) {
      List<String> pinned = new ArrayList<>(List.of("taskset", "-c", producerCpus));
      pinned.addAll(java);
      pinned.add("-D" + PRODUCER_CPUS + "=" + producerCpus);
      pinned.addAll(rest);
      return pinned;
    }
  }

  private final DataSource db;
  private final long redisPid;
  private final Split split;

  private CpuPinning(DataSource db, long redisPid, Split split) {
    this.db = db;
    this.redisPid = redisPid;
    this.split = split;
  }

  /** Splits this machine's CPUs in two halves, the first for the producers. */
  public static Split halves() {
    int cpus = Runtime.getRuntime().availableProcessors();
    if (cpus < 2) {
      throw new IllegalArgumentException("--pin-producers needs at least 2 CPUs, this JVM sees " + cpus);
    }
    int half = cpus / 2;
    return new Split(range(0, half - 1), range(half, cpus - 1), range(0, cpus - 1));
  }

  /** Moves everything but the producers to the other half of the CPUs; {@link #close()} undoes it. */
  static CpuPinning apply(DataSource db, UnifiedJedis redis, Split split) {
    CpuPinning pinning = new CpuPinning(db, redisPid(redis), split);
    pinning.pinAll(split.otherCpus());
    return pinning;
  }

  @Override
  public void close() {
    pinAll(split.allCpus());
  }

  private void pinAll(String cpus) {
    List<Long> pids = new ArrayList<>(serverPids());
    pids.add(ProcessHandle.current().pid());
    pids.add(redisPid);
    taskset(pids, cpus);
  }

  /** The postmaster and every process it started, read from the server (which must run on this machine). */
  private List<Long> serverPids() {
    List<Long> pids = new ArrayList<>();
    try (Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL")) {
      while (rs.next()) {
        pids.add(rs.getLong(1));
      }
    } catch (SQLException e) {
      throw new LedgerException("--pin-producers: could not list PostgreSQL's processes: " + e.getMessage(), e);
    }
    if (pids.isEmpty() || !runsHere(pids.get(0), "postgres")) {
      throw new LedgerException("--pin-producers needs PostgreSQL on this machine; its processes are not here");
    }
    pids.add(parentOf(pids.get(0)));
    return pids;
  }

  /** Moves the backends {@code pids} to {@code cpus}: a producer process calls it for its own, once connected. */
  static void pinBackends(Collection<Long> pids, String cpus) {
    taskset(pids, cpus);
  }

  private static long redisPid(UnifiedJedis redis) {
    String info = redis.info("server");
    long pid = info.lines().filter(l -> l.startsWith("process_id:")).mapToLong(l -> Long.parseLong(l.substring(11)
        .trim())).findFirst().orElseThrow(() -> new LedgerException("--pin-producers: Redis did not say its pid"));
    if (!runsHere(pid, "redis")) {
      throw new LedgerException("--pin-producers needs Redis on this machine; its process " + pid + " is not here");
    }
    return pid;
  }

  /** Whether process {@code pid} of this machine is the server named: a pid from another machine may exist here. */
  private static boolean runsHere(long pid, String name) {
    try {
      return Files.readString(Path.of("/proc", Long.toString(pid), "comm")).startsWith(name);
    } catch (IOException e) {
      return false;
    }
  }

  private static long parentOf(long pid) {
    try {
      return ProcStat.parent(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
    } catch (IOException e) {
      throw new LedgerException("--pin-producers: could not read the parent of process " + pid, e);
    }
  }

  private static void taskset(Collection<Long> pids, String cpus) {
    for (long pid : pids) {
      List<String> command = List.of("taskset", "-a", "-p", "-c", cpus, Long.toString(pid));
      try {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
          // A backend may end between the listing and the move; a live one that cannot be moved is a failure.
          if (Files.exists(Path.of("/proc", Long.toString(pid)))) {
            throw new LedgerException("--pin-producers: " + String.join(" ", command) + " failed: " + output.trim());
          }
        }
      } catch (IOException e) {
        throw new LedgerException("--pin-producers needs taskset (util-linux): " + e.getMessage(), e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new LedgerException("--pin-producers: interrupted");
      }
    }
  }

  private static String range(int from, int to) {
    return from == to ? Integer.toString(from) : from + "-" + to;
  }
}
