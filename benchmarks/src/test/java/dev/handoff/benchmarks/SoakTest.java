package dev.handoff.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench --soak}, short, against the test servers: it writes its report and verdict, the counts it prints are
 * the database's, and what retention deleted adds up. Whether a 20-second run's figures come out flat depends on
 * the machine, so the test holds the verdict to agree with the exit code, not to pass.
 */
@HandoffTest
class SoakTest {

  private final TestEnvironment env;

  SoakTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aShortSoakWritesItsReportAndItsCountsAddUp(@TempDir Path dir) throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    Path report = dir.resolve("soak");
    int exit = BenchmarksCli.execute(new PrintWriter(out), new PrintWriter(err), "bench", "--soak", "20s", "--rate",
        "300", "--soak-retention", "4s", "--soak-dedup-window", "6s", "--sample-every", "2s", "--jdbc-url",
        env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(), "--schema", env.schema(),
        "--key-prefix", env.keyPrefix(), "--report", report.toString());

    String printed = out.toString();
    List<String> lines = printed.lines().toList();
    String verdict = lines.get(lines.size() - 1);
    assertThat(verdict).as("output:%n%s%nstderr:%n%s", printed, err).matches("(PASS|FAIL): stream length .*")
        .endsWith("; 0 missing, 0 duplicated");
    assertThat(exit).as("exit code of %s", verdict).isEqualTo(verdict.startsWith("PASS") ? 0 : 1);
    for (String f : new String[] {"soak-report.md", "soak-rows.svg", "soak-memory.svg", "soak-p99.svg"}) {
      assertThat(report.resolve(f)).as(f).isNotEmptyFile();
    }
    String md = Files.readString(report.resolve("soak-report.md"));
    assertThat(md).contains("## Verdict", verdict, "| outbox rows |", "| inbox rows |", "| stream length (entries) |",
        "| Redis used_memory (bytes) |", "| heap after GC (bytes) |", "| p99 commit to charge (ms) |");
    assertThat(Pattern.compile("^\\| \\d+ \\| [\\d,]+ \\| [\\d,]+ \\|", Pattern.MULTILINE).matcher(md).results()
        .count()).as("one sample row every 2 s").isEqualTo(10);

    long payments = env.queryLong("SELECT count(*) FROM payment");
    // At most what the paced schedule holds for the duration (producers that fall behind on a loaded machine catch
    // up only until the end). The schedule is seeded, so it holds the same count at every run, near the rate's.
    Matcher scheduled = Pattern.compile("\\(Poisson arrivals: ([\\d,]+) payments scheduled\\)").matcher(printed);
    assertThat(scheduled.find()).as("output:%n%s", printed).isTrue();
    long schedule = Long.parseLong(scheduled.group(1).replace(",", ""));
    assertThat(schedule).isBetween(300L * 20 * 9 / 10, 300L * 20 * 11 / 10);
    assertThat(payments).isBetween(10L, schedule);
    assertThat(env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'")).isEqualTo(payments);
    assertThat(md).contains(String.format("Payments %,d, charged %,d; audit: 0 missing, 0 duplicated", payments,
        payments));
    // Whatever the purge did and when: every outbox row is either still there or in the purge log.
    assertThat(env.queryLong("SELECT count(*) FROM outbox")
        + env.queryLong("SELECT coalesce(sum(rows), 0) FROM outbox_purged")).isEqualTo(payments);
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger'")).isBetween(0L, payments);
  }
}
