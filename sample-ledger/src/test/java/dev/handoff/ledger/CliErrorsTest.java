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
        "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=hunter2");
    CliProcess badRedisUrl = CliProcess.start("status", "--jdbc-url", jdbc, "--schema", env.schema(),
        "--redis-url", "http://:hunter2@cache");
    CliProcess unreachableRedis = CliProcess.start("consume", "--jdbc-url", jdbc, "--schema", env.schema(),
        "--redis-url", "redis://:hunter2@127.0.0.1:1");
    CliProcess missingSchema = CliProcess.start("verify", "--jdbc-url", jdbc, "--schema", "no_such_schema");
    CliProcess missingUrl = CliProcess.start("pay", "--count", "1");

    assertOneLineError(badJdbcUrl, "sample-ledger: the JDBC URL must start with jdbc:postgresql:");
    assertOneLineError(unreachablePostgres, "sample-ledger: cannot connect to PostgreSQL at "
        + "jdbc:postgresql://127.0.0.1:1/nowhere?user=app&password=***");
    assertOneLineError(badRedisUrl, "sample-ledger: the Redis URL must look like redis://");
    assertOneLineError(unreachableRedis, "sample-ledger: cannot connect to Redis at redis://:***@127.0.0.1:1");
    assertOneLineError(missingSchema, "sample-ledger: schema 'no_such_schema' has no table 'outbox': run the"
        + " 'migrate' command first");
    assertOneLineError(missingUrl, "sample-ledger: --jdbc-url or HANDOFF_JDBC_URL is required");
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
