package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Errors a user can make or meet (bad URL, unreachable server, missing schema) end a command with one clear line on
 * stderr and a non-zero exit, never a stack trace, and never show a password. Each runs as a real process.
 */
@HandoffTest
class CliErrorsTest {

  private final TestEnvironment env;

  CliErrorsTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void badUrlsUnreachableServersAndAMissingSchemaAreOneClearLineAndANonZeroExit() throws Exception {
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    String jdbc = env.postgres().jdbcUrl();
    String redis = env.redisUri().toString();
    // All at once: each JVM takes a second to start, and they do not depend on each other.
    CliProcess badJdbcUrl = CliProcess.start("verify", "--jdbc-url", "postgres://db/app?password=hunter2");
    CliProcess unreachablePostgres = CliProcess.start("verify", "--jdbc-url",
        "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=hunter2", "--connect-timeout", "0s");
    CliProcess badRedisUrl = CliProcess.start("consume", "--jdbc-url", jdbc, "--schema", env.schema(),
        "--redis-url", "http://:hunter2@cache");
    CliProcess unreachableRedis = CliProcess.start("consume", "--jdbc-url", jdbc, "--schema", env.schema(),
        "--redis-url", "redis://:hunter2@127.0.0.1:1", "--connect-timeout", "0s");
    CliProcess missingSchema = CliProcess.start("verify", "--jdbc-url", jdbc, "--schema", "no_such_schema");
    CliProcess missingUrl = CliProcess.start("pay", "--count", "1");
    CliProcess unknownOption = CliProcess.start("pay", "--count", "1", "--bogus");
    CliProcess noCommand = CliProcess.start();
    CliProcess badDuration = CliProcess.start("consume", "--jdbc-url", jdbc, "--min-idle", "thirty");
    CliProcess badBatchSize = CliProcess.start("consume", "--jdbc-url", jdbc, "--schema", env.schema(),
        "--redis-url", redis, "--batch-size", "-1");
    CliProcess waitedForPostgres = CliProcess.start("verify", "--jdbc-url",
        "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=hunter2", "--connect-timeout", "1s");

    assertOneLineError(badJdbcUrl, "sample-ledger: the JDBC URL must start with jdbc:postgresql:");
    assertOneLineError(unreachablePostgres, "sample-ledger: cannot connect to PostgreSQL at "
        + "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=***");
    assertOneLineError(badRedisUrl, "sample-ledger: the Redis URL must look like redis://");
    assertOneLineError(unreachableRedis, "sample-ledger: cannot connect to Redis at redis://:***@127.0.0.1:1");
    assertOneLineError(missingSchema, "sample-ledger: schema 'no_such_schema' has no table 'outbox': create"
        + " handoff's tables first (java -jar cli/target/handoff.jar migrate --schema no_such_schema)");
    assertOneLineError(missingUrl, "sample-ledger: --jdbc-url or HANDOFF_JDBC_URL is required");
    assertOneLineError(unknownOption, "sample-ledger: Unknown option: '--bogus' (see sample-ledger pay --help)");
    assertOneLineError(noCommand, "sample-ledger: a command is required: pay, consume or verify (the relay, status"
        + " and dlq are handoff.jar's; the demo is ledger-demo.jar) (see sample-ledger --help)");
    assertOneLineError(badDuration, "sample-ledger: Invalid value for option '--min-idle': 'thirty' is not a"
        + " duration: expected a number with ms, s, m, h or d (500ms, 10s, 2m) or ISO-8601 (PT10S)");
    assertOneLineError(badBatchSize, "sample-ledger: --batch-size must be between 1 and 10000");
    // one WARN while it waits, then the one-line error that says it waited
    int exit = waitedForPostgres.waitFor(60);
    assertThat(exit).isEqualTo(2);
    assertThat(waitedForPostgres.stderrLines()).hasSize(2);
    assertThat(waitedForPostgres.stderrLines().get(0)).contains("waiting up to 1000 ms for PostgreSQL")
        .doesNotContain("hunter2");
    assertThat(waitedForPostgres.stderrLines().get(1)).startsWith("sample-ledger: cannot connect to PostgreSQL at"
        + " jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=*** (waited 1000 ms, --connect-timeout): ")
        .contains("refused").doesNotContain("hunter2");
    assertThat(redis).isNotBlank();
  }

  private static void assertOneLineError(CliProcess p, String prefix) throws InterruptedException {
    int exit = p.waitFor(60);
    List<String> lines = p.stderrLines();
    assertThat(exit).as("exit code; stderr: %s", lines).isNotZero();
    assertThat(lines).as("stderr").hasSize(1);
    assertThat(lines.get(0)).startsWith(prefix).doesNotContain("hunter2");
    assertThat(p.stdout()).as("stdout").isEmpty();
  }
}
