package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamMessage;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Starting and closing a consumer from two threads at once leaves nothing running behind. */
@HandoffTest
class ConsumerLifecycleTest {

  private final TestEnvironment env;

  ConsumerLifecycleTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aStreamConsumerClosedWhileItStartsLeavesNoThreadBehind() throws Exception {
    Fixture f = new Fixture(env, "race-stream");
    race("handoff-consumer-", group -> f.consumer(group).build());
  }

  @Test
  void aListConsumerClosedWhileItStartsLeavesNoThreadBehind() throws Exception {
    Fixture f = new Fixture(env, "race-list");
    race("handoff-list-consumer-", group -> TransportSide.listConsumer(env, f, group)
        .handler(f.effect(group, null)).build());
  }

  @Test
  void anErrorThrownByAListenerIsLoggedAndTheWorkersCarryOn() throws Exception {
    Fixture f = new Fixture(env, "listener-error");
    f.createGroupAtStart("g");
    AtomicBoolean thrown = new AtomicBoolean();
    try (StreamConsumer consumer = f.consumer("g").listener(new ConsumerListener() {
      @Override
      public void handled(InboundMessage m) {
        if (thrown.compareAndSet(false, true)) {
          throw new StackOverflowError("a listener's bug");
        }
      }
    }).build()) {
      consumer.start();
      List<UUID> first = f.publishMany(3).stream().map(StreamMessage::messageId).toList();
      ConsumerTestKit.awaitProcessed(consumer, first, Duration.ofSeconds(10));
      // The listener hears of a batch after its commit, which is what awaitProcessed sees: wait for it too.
      await("the listener's Error").atMost(Duration.ofSeconds(10)).untilTrue(thrown);
      // The worker survived the Error: what comes next is handled too, and everything is acknowledged.
      List<UUID> next = f.publishMany(3).stream().map(StreamMessage::messageId).toList();
      ConsumerTestKit.awaitProcessed(consumer, next, Duration.ofSeconds(10));
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(10));
    }
    assertThat(f.effectCount("g")).isEqualTo(6);
    assertThat(f.doubleEffects("g")).isZero();
  }

  /**
   * Twenty times: start on one thread and close on another, released together. Whichever wins, once both returned
   * no thread of that consumer may be left (a housekeeping executor created after the close used to run forever).
   */
  private void race(String threadPrefix, Function<String, ? extends AutoCloseable> build) throws Exception {
    for (int i = 0; i < 20; i++) {
      String group = "race" + i;
      AutoCloseable consumer = build.apply(group);
      CountDownLatch go = new CountDownLatch(1);
      AtomicReference<Throwable> unexpected = new AtomicReference<>();
      Thread starter = new Thread(() -> {
        try {
          go.await();
          start(consumer);
        } catch (IllegalStateException closedFirst) {
          // the close won: a consumer that was closed does not start
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Throwable t) {
          unexpected.set(t);
        }
      });
      starter.start();
      go.countDown();
      close(consumer);
      starter.join(Duration.ofSeconds(30).toMillis());
      assertThat(starter.isAlive()).as("the starter of %s returned", group).isFalse();
      assertThat(unexpected.get()).as("what the start of %s threw, besides losing to the close", group).isNull();
      String prefix = threadPrefix + group + "-";
      ConsumerTestKit.await("no thread of " + group + " left", Duration.ofSeconds(10),
          () -> threadsNamed(prefix).isEmpty());
    }
  }

  private static void start(AutoCloseable consumer) {
    if (consumer instanceof StreamConsumer s) {
      s.start();
    } else {
      ((ListConsumer) consumer).start();
    }
  }

  private static void close(AutoCloseable consumer) {
    if (consumer instanceof StreamConsumer s) {
      s.close(Duration.ofSeconds(5));
    } else {
      ((ListConsumer) consumer).close(Duration.ofSeconds(5));
    }
  }

  private static List<String> threadsNamed(String prefix) {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
        .filter(n -> n.startsWith(prefix)).toList();
  }
}
