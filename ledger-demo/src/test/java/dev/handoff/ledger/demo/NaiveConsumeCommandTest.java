package dev.handoff.ledger.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/**
 * ledger-demo.jar's {@code naive-consume} (the sample's former {@code consume --naive}, moved here from
 * {@code LedgerCliProcessTest} with the naive consumer): lists are refused with one line, exit 2.
 */
@HandoffTest
class NaiveConsumeCommandTest {

  private final TestEnvironment env;

  NaiveConsumeCommandTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void naiveConsumeRefusesTheListTransport() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = DemoCommand.execute(new PrintWriter(out), new PrintWriter(err), "naive-consume", "--transport", "list",
        "--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(), "--schema", env.schema(),
        "--key-prefix", env.keyPrefix());
    assertThat(exit).isEqualTo(2);
    assertThat(err.toString()).contains("naive-consume runs on streams only");
    assertThat(out.toString()).isEmpty();
  }
}
