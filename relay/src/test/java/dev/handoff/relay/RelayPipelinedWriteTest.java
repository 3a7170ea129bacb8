package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.providers.PooledConnectionProvider;

/**
 * A cycle writes the batches of all its shards to Redis in one pipeline, and a pipeline that fails, in part or in
 * whole, loses nothing and adds nothing twice: each batch it did not complete goes on its own, and is found where
 * it got through. On the real server, with a client that counts what the relay asks of it.
 */
@HandoffTest
class RelayPipelinedWriteTest {

  private static final String TOPIC = "payments";
  private static final int SHARDS = 4;
  private static final int ROWS = 80;

  private final TestEnvironment env;
  private CountingRedis redis;

  RelayPipelinedWriteTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void client() {
    URI uri = env.redisUri();
    redis = new CountingRedis(new HostAndPort(uri.getHost(), uri.getPort()));
  }

  @AfterEach
  void close() {
    redis.close();
  }

  @Test
  void aCycleWritesTheBatchesOfAllItsShardsInOnePipeline() throws Exception {
    try (Relay relay = relay()) {
      RelayCycle cycle = relay.relayOnce();
      assertThat(cycle.published()).isEqualTo(ROWS);
    }
    assertThat(redis.pipelines.get()).as("one pipeline for the cycle that wrote").isEqualTo(1);
    assertThat(redis.pipelinedPublishes.get()).as("every shard's batch in it").isEqualTo(SHARDS);
    assertThat(redis.publishesAlone.get()).as("no batch written on its own").isZero();
    assertStreamsHoldEveryRowOnce();
  }

  @Test
  void batchesAPipelineCouldNotRunBecauseRedisForgotTheScriptGoOnTheirOwn() throws Exception {
    env.redis().scriptFlush(); // what a restart does: the pipeline's EVALSHAs all answer NOSCRIPT
    try (Relay relay = relay()) {
      assertThat(relay.relayOnce().published()).isEqualTo(ROWS);
    }
    assertThat(redis.pipelines.get()).isEqualTo(1);
    assertThat(redis.publishesAlone.get()).as("each batch sent again on its own, loading the script")
        .isEqualTo(SHARDS);
    assertStreamsHoldEveryRowOnce();
  }

  @Test
  void aShardWhoseScriptFailsInThePipelineWaitsWhileTheOthersAreMarked() throws Exception {
    String broken = key(2);
    AtomicBoolean breakIt = new AtomicBoolean(true);
    RelayFaults strangerOverwrites = new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (shard.shard() == 2 && breakIt.getAndSet(false)) {
          env.redis().set(broken, "not a stream"); // its script's XADD fails: WRONGTYPE
        }
      }
    };
    try (Relay relay = relay(strangerOverwrites)) {
      Throwable e = catchThrowable(relay::relayOnce);
      assertThat(e).isInstanceOf(JedisDataException.class).hasMessageContaining("WRONGTYPE");
      assertThat(redis.pipelinedPublishes.get()).isEqualTo(SHARDS);
      assertThat(redis.publishesAlone.get()).as("only the failed shard's batch tried again on its own")
          .isEqualTo(1);
      long shardTwo = env.queryLong("select count(*) from outbox where shard = 2");
      assertThat(RelayTestSupport.unpublished(env)).as("the other shards' batches are marked")
          .isEqualTo(shardTwo);
      assertThat(env.queryLong("select cardinality(batch_ids) from relay_lease where shard = 2"))
          .as("shard 2's batch is still its pending batch").isEqualTo(shardTwo);

      env.redis().del(broken);
      assertThat(relay.relayOnce().published()).isEqualTo(shardTwo);
    }
    assertStreamsHoldEveryRowOnce();
  }

  /** {@code ROWS} keyed messages through an outbox that spreads the topic over {@code SHARDS} shards. */
  private void appendToEveryShard() throws Exception {
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < ROWS; i++) {
      messages.add(Message.builder(TOPIC, "payment.created").key("payment-" + i).payload("p" + i).build());
    }
    RelayTestSupport.appendAll(env, Outbox.builder().schema(env.schema())
        .topic(TopicConfig.of(TOPIC).withShards(SHARDS)).build(), messages);
  }

  private Relay relay() {
    return relay(RelayFaults.NONE);
  }

  private Relay relay(RelayFaults faults) {
    return Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(TOPIC).withShards(SHARDS)).batchSize(ROWS, ROWS)
        .idlePollInterval(Duration.ofMillis(100)).faults(faults).buildOn(redis);
  }

  @BeforeEach
  void rowsInEveryShard() throws Exception {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    for (int shard = 0; shard < SHARDS; shard++) {
      env.redis().del(key(shard), StreamFormat.relayKey(key(shard)));
    }
    appendToEveryShard();
    for (int shard = 0; shard < SHARDS; shard++) {
      assertThat(env.queryLong("select count(*) from outbox where shard = ?", shard)).as("rows of shard " + shard)
          .isPositive();
    }
  }

  private void assertStreamsHoldEveryRowOnce() throws Exception {
    long total = 0;
    for (int shard = 0; shard < SHARDS; shard++) {
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key(shard));
      assertThat(entries).hasSize((int) env.queryLong("select count(*) from outbox where shard = ?", shard));
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(entries.size());
      RelayTestSupport.assertInOutboxIdOrder(entries);
      total += entries.size();
    }
    assertThat(total).isEqualTo(ROWS);
    assertThat(RelayTestSupport.unpublished(env)).isZero();
    assertThat(env.queryLong("select count(*) from relay_lease where batch_ids is not null")).isZero();
  }

  private String key(int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), TOPIC, shard);
  }

  /** A client of the shared server that counts the relay's pipelines and its publish scripts, pipelined or not. */
  private static final class CountingRedis extends UnifiedJedis {
    private static final byte[] PUBLISH_SHA = publishSha();

    final AtomicInteger pipelines = new AtomicInteger();
    final AtomicInteger pipelinedPublishes = new AtomicInteger();
    final AtomicInteger publishesAlone = new AtomicInteger();

    CountingRedis(HostAndPort server) {
      super(new PooledConnectionProvider(server, DefaultJedisClientConfig.builder().build()), 3,
          Duration.ofSeconds(2));
    }

    @Override
    public AbstractPipeline pipelined() {
      pipelines.incrementAndGet();
      return new Pipeline(provider.getConnection(), true) {
        @Override
        public Response<Object> evalsha(byte[] sha, List<byte[]> keys, List<byte[]> args) {
          if (Arrays.equals(sha, PUBLISH_SHA)) {
            pipelinedPublishes.incrementAndGet();
          }
          return super.evalsha(sha, keys, args);
        }
      };
    }

    @Override
    public Object evalsha(byte[] sha, List<byte[]> keys, List<byte[]> args) {
      if (Arrays.equals(sha, PUBLISH_SHA)) {
        publishesAlone.incrementAndGet();
      }
      return super.evalsha(sha, keys, args);
    }

    private static byte[] publishSource() {
      try (InputStream in = Relay.class.getResourceAsStream("/dev/handoff/relay/publish.lua")) {
        return in.readAllBytes();
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    private static byte[] publishSha() {
      try {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(publishSource()))
            .getBytes(StandardCharsets.US_ASCII);
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
