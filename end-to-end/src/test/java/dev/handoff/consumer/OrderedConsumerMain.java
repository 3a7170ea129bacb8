package dev.handoff.consumer;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A consumer process of an ordered group, for {@code OrderedProcessesTest}: it runs until SIGTERM and records its
 * effects as {@link OrderedTopic} does. Given a message key and number to hold, its handler prints
 * {@code HOLDING <message id>} when it reaches that message and then holds the batch's transaction open until a line
 * arrives on its standard input, so that the test can freeze or kill the process while it holds a batch, and let
 * it go on (try to commit) when it chooses.
 *
 * <p>Arguments: jdbcUrl user password schema keyPrefix redisUri topic shards group name workers holdKey holdSeq.
 */
public final class OrderedConsumerMain {

  private OrderedConsumerMain() {}

  public static void main(String[] args) throws Exception {
    HikariDataSource db = new HikariDataSource();
    db.setJdbcUrl(args[0]);
    if (!args[1].equals("null")) {
      db.setUsername(args[1]);
    }
    if (!args[2].equals("null")) {
      db.setPassword(args[2]);
    }
    String schema = args[3];
    db.setSchema(schema);
    db.setMaximumPoolSize(8);
    String topic = args[6];
    int shards = Integer.parseInt(args[7]);
    String name = args[9];
    String holdKey = args[11];
    int holdSeq = Integer.parseInt(args[12]);
    MessageHandler record = OrderedTopic.effect(schema, "ordered_effect_" + topic.replace('-', '_'), name, shards);
    AtomicBoolean held = new AtomicBoolean();
    MessageHandler handler = (tx, m) -> {
      if (m.key().equals(holdKey) && OrderedTopic.seqOf(m) == holdSeq && held.compareAndSet(false, true)) {
        System.out.println("HOLDING " + m.messageId());
        System.out.flush();
        // Held until the test says so (or kills the process): no timing of its own.
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      }
      record.handle(tx, m);
    };
    StreamConsumer consumer = OrderedTopic.builder(db, RedisConnectionSpec.of(args[5]), schema, args[4], topic,
        shards, args[8], name).workers(Integer.parseInt(args[10])).batchSize(20).handler(handler).build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      consumer.close();
      db.close();
      stopped.countDown();
    }));
    consumer.start();
    System.out.println("STARTED " + name);
    System.out.flush();
    stopped.await();
  }
}
