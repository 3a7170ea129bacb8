package dev.handoff.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import dev.handoff.ledger.LedgerAudit;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code bench --quick} against the test servers: it writes its report and its counts are the database's. */
@HandoffTest
class BenchTest {

  private final TestEnvironment env;

  BenchTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void quickBenchWritesItsReportAndAgreesWithTheDatabase(@TempDir Path dir) throws Exception {
    // when
    long checkpointsBefore = requestedCheckpoints();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    Path report = dir.resolve("report");
    int exit = BenchmarksCli.execute(new PrintWriter(out), new PrintWriter(err), "bench", "--quick", "--jdbc-url",
        env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(), "--schema", env.schema(),
        "--key-prefix", env.keyPrefix(), "--report", report.toString(), "--keep");

    // then
    String printed = out.toString();
    assertThat(exit).as("exit code; output:%n%s%nstderr:%n%s", printed, err).isZero();
    for (String f : new String[] {"report.md", "throughput.svg", "latency-1.svg", "histogram-1.svg",
        "overload-memory.svg", "overload-backlog.svg", "rates.svg", "summary.tsv"}) {
      assertThat(report.resolve(f)).as(f).isNotEmptyFile();
    }
    assertThat(Files.readString(report.resolve("throughput.svg"))).startsWith("<svg").contains("<polyline");
    String md = Files.readString(report.resolve("report.md"));
    assertThat(md).contains("## Targets", "## Components against their baselines", "raw pipelined XADD",
        "raw batched insert of inbox marker + charge", "## Memory when producers outrun consumers tenfold");
    // It names the servers it ran against: the ones this test gave it, whichever versions they are.
    assertThat(md).contains("| PostgreSQL | PostgreSQL " + postgresVersion() + " ");
    assertThat(md).contains("| Redis | " + redisVersion() + " (");
    // Every run starts right after a checkpoint of its own: at least the warm-up's two and the two runs' two (the
    // probe's is one more), where the server's schedule would have asked none in a run this short.
    assertThat(md).contains("| checkpoints | a `CHECKPOINT` after each run's set-up, right before it starts");
    assertThat(requestedCheckpoints() - checkpointsBefore).as("checkpoints asked during the bench")
        .isGreaterThanOrEqualTo(5);

    // Each run's payments and charges, as printed, are those of its own schema (kept by --keep), one charge each:
    // the run at 500/s, then the one flat out, each in a fresh schema seeded with the same settled history.
    Matcher m = Pattern.compile("^e2e run 1 \\(2x1, 500/s\\): payments (\\d+) charges (\\d+)$", Pattern.MULTILINE)
        .matcher(printed);
    assertThat(m.find()).as("summary line in:%n%s", printed).isTrue();
    assertThat(Long.parseLong(m.group(1))).isGreaterThan(500);
    Matcher flat = Pattern.compile("^e2e run 2 \\(2x1, flat out\\): payments (\\d+) charges (\\d+)$",
        Pattern.MULTILINE).matcher(printed);
    assertThat(flat.find()).as("flat-out summary line in:%n%s", printed).isTrue();
    for (Matcher run : List.of(m, flat)) {
      String schema = env.schema() + (run == m ? "_run1" : "_run2");
      long payments = Long.parseLong(run.group(1));
      assertThat(Long.parseLong(run.group(2))).as("charges of %s", schema).isEqualTo(payments);
      assertThat(env.queryLong("SELECT count(*) FROM " + schema + ".payment WHERE payment_id NOT LIKE 'history-%'"))
          .as("payments in %s", schema).isEqualTo(payments);
      assertThat(env.queryLong("SELECT count(*) FROM " + schema + ".charge WHERE ledger = 'ledger'"
          + " AND payment_id NOT LIKE 'history-%'")).as("charges in %s", schema).isEqualTo(payments);
      assertThat(env.queryLong("SELECT count(*) FROM " + schema + ".charge WHERE payment_id LIKE 'history-%'"))
          .isEqualTo(env.queryLong("SELECT count(*) FROM " + schema + ".payment WHERE payment_id LIKE 'history-%'"))
          .isEqualTo(20_000);
      assertThat(LedgerAudit.audit(env.dataSource(), schema, "ledger").passed()).as("audit of %s", schema).isTrue();
    }

    // Right after it, the raw pipeline at the same rate: every one of its payments charged exactly once, counted in
    // its own schema before that was dropped, and the comparison printed and reported.
    Matcher raw = Pattern.compile("^e2e raw run 1 \\(2x1, 500/s\\): payments (\\d+) charge rows (\\d+) charged"
        + " payments"
        + " (\\d+)$", Pattern.MULTILINE).matcher(printed);
    assertThat(raw.find()).as("raw pipeline line in:%n%s", printed).isTrue();
    long rawPayments = Long.parseLong(raw.group(1));
    assertThat(rawPayments).isGreaterThan(500);
    assertThat(Long.parseLong(raw.group(2))).as("raw charge rows").isEqualTo(rawPayments);
    assertThat(Long.parseLong(raw.group(3))).as("raw payments charged").isEqualTo(rawPayments);
    assertThat(printed).containsPattern("(?m)^end-to-end vs raw pipeline \\(2x1, 500/s\\): \\d+% of raw's \\S+/s$");
    assertThat(md).contains("## End to end against a raw pipeline", "### Database commits per payment",
        "each charged once");
    // --quick warms up once, and the report gives the compilers' CPU through each of the four measured runs.
    assertThat(printed).containsPattern("(?m)warm-up round 1: the JIT's compiler threads used [\\d,]+ ms of CPU")
        .doesNotContain("warm-up round 2");
    assertThat(md).contains("### JIT compilation during the measured runs",
        "use under 0.1 of a core through a round (rounds: at least 1, at most 1, in the log)")
        .containsPattern("(?m)^\\| run 1 \\(2x1, 500/s\\) \\| [\\d.]+ \\| [\\d,]+ \\| \\d\\.\\d\\d \\|$")
        .containsPattern("(?m)^\\| raw run 2 \\(2x1, flat out\\) \\| [\\d.]+ \\| [\\d,]+ \\| \\d\\.\\d\\d \\|$");
    // The relay's transactions are counted, not derived, and the consumer's round trips per batch reported.
    assertThat(md).contains("### Consumer round trips per batch", "CountingDataSource", "![throughput and p99 against"
        + " the asked rate](rates.svg)").doesNotContain("**derived**", "(derived)");
    assertThat(Files.readString(report.resolve("rates.svg"))).startsWith("<svg").contains("<polyline", "<circle",
        "handoff", "raw pipeline");
    assertThat(printed).containsPattern("(?m)consumer per batch \\(run 1 \\(2x1, 500/s\\)\\): [\\d,]+ batches of"
        + " [\\d.]+"
        + " entries; XREADGROUP [\\d.]+, XACK [\\d.]+")
        .containsPattern("(?m)consumer per batch \\(raw run 1 \\(2x1, 500/s\\)\\): ");
    List<String> tsv = Files.readAllLines(report.resolve("summary.tsv"));
    assertThat(tsv).as("summary.tsv: a header and one line per run (handoff and raw at 500/s, then flat out)")
        .hasSize(5);
    // Flat out, the producer side: the same transactions without the outbox row, beside raw's and handoff's.
    assertThat(printed).containsPattern("(?m)^producer side \\(2x1\\): handoff [\\d,]+ tx/s = \\d+% of the same"
        + " transactions without the outbox row \\([\\d,]+ tx/s\\); raw pipeline \\d+%$");
    assertThat(md).contains("### Producer side", "| 2x1 | ");
    List<String> columns = List.of(tsv.get(0).split("\t"));
    BiFunction<Integer, String, String> cell = (line, column) ->
        tsv.get(line).split("\t")[columns.indexOf(column)];
    BiFunction<Integer, String, Double> number = (line, column) ->
        Double.parseDouble(cell.apply(line, column));
    boolean commitTimestamps = env.queryLong("SELECT count(*) FROM pg_settings WHERE name = 'track_commit_timestamp'"
        + " AND setting = 'on'") == 1;
    assertThat(cell.apply(1, "pipeline")).isEqualTo("handoff");
    assertThat(cell.apply(2, "pipeline")).isEqualTo("raw");
    for (int line = 1; line <= 2; line++) {
      assertThat(number.apply(line, "rate_asked")).isEqualTo(500);
      assertThat(cell.apply(line, "relay_counted")).isEqualTo("true");
      assertThat(number.apply(line, "relay_commits_per_payment")).as("relay commits counted").isPositive();
      assertThat(number.apply(line, "producer_commits_per_payment")).isEqualTo(1.0); // one payment per transaction
      assertThat(number.apply(line, "consumer_batches")).isPositive();
      assertThat(number.apply(line, "consumer_batch_size")).isBetween(1.0, 100.0);
      assertThat(number.apply(line, "xreadgroup_per_batch")).as("XREADGROUP per batch").isGreaterThanOrEqualTo(1);
      assertThat(number.apply(line, "xack_per_batch")).as("XACK per batch").isGreaterThanOrEqualTo(1);
      assertThat(number.apply(line, "db_commits_per_batch")).as("database commits per batch")
          .isGreaterThanOrEqualTo(1);
      assertThat(number.apply(line, "p99_ms")).isPositive();
      assertThat(number.apply(line, "window_charged_per_s")).isPositive();
      // Where the rows waited, from the run's tables. A stream ID is taken after the producer's transaction
      // committed and before the consumer's began: each leg is at least 0, less the millisecond the ID's time is
      // truncated to. The server's own commit timestamps, where it records them, give the two transactions.
      assertThat(cell.apply(line, "waits_from_commit")).isEqualTo(Boolean.toString(commitTimestamps));
      assertThat(number.apply(line, "to_stream_p50_ms")).isGreaterThan(-1.0)
          .isLessThanOrEqualTo(number.apply(line, "to_stream_p99_ms"));
      assertThat(number.apply(line, "to_consumer_p50_ms")).isGreaterThan(-1.0)
          .isLessThanOrEqualTo(number.apply(line, "to_consumer_p99_ms"));
      for (String transaction : List.of("producer_tx", "consumer_tx")) {
        if (commitTimestamps) {
          assertThat(number.apply(line, transaction + "_p50_ms")).as(transaction).isPositive()
              .isLessThanOrEqualTo(number.apply(line, transaction + "_p99_ms"));
        } else {
          assertThat(cell.apply(line, transaction + "_p50_ms")).as(transaction).isEqualTo("NaN");
        }
      }
    }
    assertThat(md).contains("### Where a row waits", "| 500/s | handoff | ", "| 500/s | raw | ");
    // The CPU each run took, per payment: the machine's holds this JVM's, which runs the producers, less what the
    // kernel's tick accounting may round off (100 ms over the run, far below what PostgreSQL and Redis take).
    assertThat(md).contains("### CPU per payment");
    for (int line = 1; line <= 4; line++) {
      double paid = number.apply(line, "paid");
      assertThat(number.apply(line, "jvm_cpu_ms_per_payment")).as("this JVM's CPU per payment").isPositive();
      assertThat(number.apply(line, "machine_cpu_ms_per_payment")).as("the machine's CPU per payment")
          .isGreaterThanOrEqualTo(number.apply(line, "jvm_cpu_ms_per_payment") - 100 / paid);
      assertThat(number.apply(line, "machine_busy_cores")).as("busy cores").isPositive();
    }
    // The raw consumer reads new entries only, commits once per batch, and never claims.
    assertThat(number.apply(2, "db_commits_per_batch")).isEqualTo(1.0);
    assertThat(number.apply(2, "xautoclaim_per_batch")).isZero();
    // The handoff relay's one rollback per connection of its LISTEN (the session check) and nothing else.
    assertThat(number.apply(1, "relay_rollbacks")).isBetween(0.0, 3.0);
    // Every payment of each run is in its counted consumer batches.
    assertThat(number.apply(1, "consumer_batches") * number.apply(1, "consumer_batch_size"))
        .isCloseTo((double) Long.parseLong(m.group(1)), offset(0.5));
    assertThat(number.apply(3, "consumer_batches") * number.apply(3, "consumer_batch_size"))
        .isCloseTo((double) Long.parseLong(flat.group(1)), offset(0.5));

    // No run wrote into the main schema, which holds the settled history only; the second handoff run did not
    // start on the first one's rows, nor raw's on handoff's.
    assertThat(env.queryLong("SELECT count(*) FROM payment WHERE payment_id NOT LIKE 'history-%'")).isZero();
    assertThat(env.queryLong("SELECT count(*) FROM " + env.schema() + "_run2.payment WHERE payment_id LIKE 'r1-%'"))
        .isZero();
    assertThat(env.queryLong("SELECT count(*) FROM " + env.schema() + "_raw.charge WHERE ledger = 'ledger'"
        + " AND payment_id NOT LIKE 'history-%'")).isZero();
    env.execute("DO $$ DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace WHERE nspname LIKE '"
        + env.schema() + "\\_%' LOOP EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP; END $$");
  }

  /** The test server's version number, such as {@code 17.5} or {@code 15.20}, as {@code version()} starts with it. */
  /** Checkpoints asked of the server so far ({@code CHECKPOINT} or WAL volume): PostgreSQL 17 moved the count. */
  private long requestedCheckpoints() {
    return env.queryLong("SELECT current_setting('server_version_num')::int") >= 170000
        ? env.queryLong("SELECT num_requested FROM pg_stat_checkpointer")
        : env.queryLong("SELECT checkpoints_req FROM pg_stat_bgwriter");
  }

  private String postgresVersion() throws Exception {
    try (Connection c = env.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW server_version")) {
      assertThat(rs.next()).isTrue();
      String version = rs.getString(1).strip().split("\\s+")[0];
      assertThat(version).matches("\\d+(\\.\\d+)*");
      return version;
    }
  }

  /** The test Redis server's {@code redis_version}. */
  private String redisVersion() {
    for (String line : env.redis().info("server").split("\r?\n")) {
      if (line.startsWith("redis_version:")) {
        return line.substring("redis_version:".length()).strip();
      }
    }
    throw new AssertionError("no redis_version in INFO server");
  }
}
