package dev.handoff.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** What docs/testing.md says of the build, read back from the build files and the harness it describes. */
class DocumentedSuiteSettingsTest {

  private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).resolve("..");

  @Test
  void theForksOrderAndTimeoutTheDocStatesAreTheBuilds() throws IOException {
    String pom = Files.readString(ROOT.resolve("pom.xml"));
    String doc = Files.readString(ROOT.resolve("docs/testing.md"));
    assertThat(pom).contains("<handoff.test.forks>3</handoff.test.forks>", "<forkCount>${handoff.test.forks}</forkCount>",
        "<handoff.test.runOrder>alphabetical</handoff.test.runOrder>", "<runOrder>${handoff.test.runOrder}</runOrder>",
        "<forkedProcessTimeoutInSeconds>900</forkedProcessTimeoutInSeconds>",
        "<argLine>-Dhandoff.test.fork=${surefire.forkNumber}</argLine>");
    assertThat(doc).contains("Surefire `forkCount` 3, property `handoff.test.forks`",
        "alphabetical order (`handoff.test.runOrder`)", "after 15 minutes (`forkedProcessTimeoutInSeconds`)",
        "`-Dhandoff.test.fork=${surefire.forkNumber}`", "-Dhandoff.test.runOrder=reversealphabetical");
  }

  @Test
  void theNewcomerCheckRunsTheReadmesTwoCommandsAndTheDocumentedOrderCheck() throws Exception {
    Path script = ROOT.resolve("scripts/newcomer-check");
    String text = Files.readString(script);
    assertThat(text).contains("## Run it", "## Run the tests", "-Dhandoff.test.runOrder=reversealphabetical",
        "MethodOrderer\\$Random", "junit.jupiter.execution.order.random.seed");
    String readme = Files.readString(ROOT.resolve("README.md"));
    assertThat(readme).contains("## Run it\n\n```bash\n./mvnw -q -DskipTests package && java -jar"
        + " ledger-demo/target/ledger-demo.jar\n```", "## Run the tests\n\n```bash\n./mvnw verify\n```");
  }

  @Test
  void clusterNodesSyncReplicasAtOnceAndFailOverOnlyWhenAsked() throws IOException {
    Path harness = ROOT.resolve("testing/src/main/java/dev/handoff/testing");
    assertThat(Files.readString(harness.resolve("ClusterNode.java"))).contains("\"--repl-diskless-sync-delay\", \"0\"");
    assertThat(Files.readString(harness.resolve("RedisCluster.java")))
        .contains("NODE_TIMEOUT = Duration.ofMillis(5000)", "clusterFailover(ClusterFailoverOption.FORCE)");
    assertThat(Files.readString(ROOT.resolve("docs/testing.md")))
        .contains("`repl-diskless-sync-delay 0`", "5 s node timeout", "`CLUSTER FAILOVER FORCE`");
  }
}
