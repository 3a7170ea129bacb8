package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Ordered processing per shard across processes, with real faults: consumers in child JVMs, one of them frozen with
 * SIGSTOP past its lease or SIGKILLed while it holds a batch. Each child records its effects as {@link OrderedTopic}
 * does, so the assertions read what committed, in the order it committed.
 */
@HandoffTest
class OrderedProcessesTest {

  private static final Duration DEADLINE = Duration.ofSeconds(90);

  private final TestEnvironment env;
  private final List<Child> children = new ArrayList<>();

  OrderedProcessesTest(TestEnvironment env) {
    this.env = env;
  }

  @AfterEach
  void stopChildren() throws Exception {
    for (Child c : children) {
      c.stop();
    }
  }

  @Test
  void twoProcessesOfTwoWorkersApplyTwentyThousandMessagesOfFiveHundredKeysInEachKeysOrderOnce() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-many", 8);
    start(t, "many", "p1", 2, "none", 0);
    start(t, "many", "p2", 2, "none", 0);
    List<StreamMessage> messages = t.publish(env.redis(), 500, 40);
    ConsumerTestKit.await("20,000 effects", DEADLINE, () -> t.effects() == messages.size());
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
    assertThat(env.queryList("SELECT DISTINCT consumer FROM " + t.effects + " ORDER BY 1", String.class))
        .containsExactly("p1", "p2");
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'many'")).isEqualTo(messages.size());
  }

  @Test
  void anOwnerFrozenPastItsLeaseWhileHoldingABatchCannotCommitOnceThawedAndOrderHolds() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-frozen", 4);
    Child a = start(t, "g", "a", 2, "key-3", 2);
    List<StreamMessage> messages = t.publish(env.redis(), 20, 10);
    UUID held = a.awaitHolding();
    a.signal("STOP");
    // Another consumer takes the frozen one's shards once their leases expired, and goes on.
    try (StreamConsumer b = t.consumer("g", "b").workers(2).batchSize(20).build()) {
      b.start();
      ConsumerTestKit.await("every message applied by b", DEADLINE, () -> t.effects() == messages.size());
      // Thawed: its batch cannot commit (PostgreSQL ended its idle transaction, and the fence finds b's epoch), and it
      // learns that it lost its shards.
      a.signal("CONT");
      a.release(); // its handler returns, and its batch tries to commit
      a.awaitLog("lost shard");
    }
    assertThat(env.queryList("SELECT consumer FROM " + t.effects + " WHERE message_id = ?", String.class, held))
        .containsExactly("b");
    assertThat(t.effects()).isEqualTo(messages.size());
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
  }

  @Test
  void anOwnerKilledMidBatchLeavesItsPendingEntriesToItsSuccessorWhoSettlesThemFirstInOrder() throws Exception {
    OrderedTopic t = new OrderedTopic(env, "o-killed", 4);
    Child a = start(t, "k", "a", 2, "key-5", 3);
    List<StreamMessage> messages = t.publish(env.redis(), 20, 10);
    UUID held = a.awaitHolding();
    a.kill();
    long before = t.effects();
    try (StreamConsumer b = t.consumer("k", "b").workers(2).batchSize(20).build()) {
      b.start();
      ConsumerTestKit.await("every message applied", DEADLINE, () -> t.effects() == messages.size());
    }
    assertThat(before).isLessThan(messages.size());
    assertThat(env.queryList("SELECT consumer FROM " + t.effects + " WHERE message_id = ?", String.class, held))
        .containsExactly("b");
    assertThat(t.doubleEffects()).isZero();
    assertThat(t.outOfOrder()).isZero();
    assertThat(t.outOfStreamOrder()).isZero();
  }

  private Child start(OrderedTopic t, String group, String name, int workers, String holdKey, int holdSeq)
      throws IOException {
    Path log = Files.createTempFile("ordered-" + name + "-", ".log");
    List<String> command = List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
        "-cp", System.getProperty("java.class.path"), OrderedConsumerMain.class.getName(),
        env.postgres().jdbcUrl(), String.valueOf(env.postgres().user()), String.valueOf(env.postgres().password()),
        env.schema(), env.keyPrefix(), env.redisUri().toString(), t.topic, String.valueOf(t.shards), group, name,
        String.valueOf(workers), holdKey, String.valueOf(holdSeq));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    Child child = new Child(name, process, log);
    children.add(child);
    child.awaitLog("STARTED " + name);
    return child;
  }

  /** A child JVM and its log file. */
  private record Child(String name, Process process, Path logFile) {

    String log() {
      try {
        return Files.readString(logFile);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    void awaitLog(String text) {
      ConsumerTestKit.await(name + "'s log saying '" + text + "'", DEADLINE,
          () -> log().contains(text) || !process.isAlive());
      assertThat(log()).as(name + "'s log").contains(text);
    }

    /** Waits until the handler holds its batch; the message it holds. */
    UUID awaitHolding() {
      awaitLog("HOLDING ");
      String line = log().lines().filter(l -> l.startsWith("HOLDING ")).findFirst().orElseThrow();
      return UUID.fromString(line.substring("HOLDING ".length()).strip());
    }

    /** Lets the handler that holds its batch return (a line on the child's standard input). */
    void release() throws IOException {
      process.getOutputStream().write("go\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
      process.getOutputStream().flush();
    }

    /** Sends SIGSTOP or SIGCONT. */
    void signal(String signal) throws Exception {
      Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid())).start();
      assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(kill.exitValue()).isZero();
    }

    /** SIGKILL: no shutdown hook runs, nothing is closed or given back. */
    void kill() throws InterruptedException {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGCONT (a frozen child cannot stop), SIGTERM, then SIGKILL if it has not stopped; deletes the log. */
    void stop() throws Exception {
      if (process.isAlive()) {
        new ProcessBuilder("kill", "-CONT", String.valueOf(process.pid())).start().waitFor(10, TimeUnit.SECONDS);
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(10, TimeUnit.SECONDS);
        }
      }
      Files.deleteIfExists(logFile);
    }
  }
}
