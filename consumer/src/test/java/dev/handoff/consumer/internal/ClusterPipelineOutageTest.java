package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.handoff.core.StreamFormat;
import dev.handoff.testing.RedisCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * A consumer acknowledges a batch's streams in one pipeline. On a cluster, Jedis's pipeline logs a node's connection
 * failure and leaves that node's replies unset; reading one then threw {@code IllegalStateException} ("Please close
 * pipeline or multi block"), which the worker logged as an unexpected failure. A frozen node is an outage: the
 * acknowledgement fails as a connection failure, which {@link Blame} puts on the environment (the worker pauses),
 * and what the other nodes acknowledged stays acknowledged.
 */
class ClusterPipelineOutageTest {

  /** Short, so that both attempts end well inside the cluster's node timeout and nothing fails over. */
  private static final JedisClientConfig CONFIG =
      DefaultJedisClientConfig.builder().resp2().socketTimeoutMillis(500).build();

  private static RedisCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  void anAcknowledgementPipelinedToAFrozenNodeIsAnOutageAndTheOtherNodesAcknowledgementsStand() {
    List<String> streams = streamsOnTwoMasters();
    String live = streams.get(0);
    String frozen = streams.get(1);
    HostAndPort frozenNode = cluster.nodeForKey(frozen);
    try (RedisGroups groups = new RedisGroups(cluster.nodeForKey(live), cluster.seeds(), CONFIG, "g", 1,
        Duration.ofMillis(100), Duration.ofSeconds(2))) {
      Map<String, List<String>> delivered = new LinkedHashMap<>();
      for (String stream : streams) {
        groups.ensureGroup(stream, true);
        try (Jedis node = cluster.admin(cluster.nodeForKey(stream))) {
          node.xadd(stream, new StreamEntryID(1, 1), Map.of("f", "1"));
        }
        delivered.put(stream, groups.readNew("c1", List.of(stream), 10, null).stream()
            .map(RedisGroups.RawEntry::id).toList());
      }
      assertThat(delivered).containsEntry(live, List.of("1-1")).containsEntry(frozen, List.of("1-1"));

      cluster.freeze(frozenNode);
      Throwable failure;
      try {
        failure = catchThrowable(() -> groups.ackAll(delivered));
      } finally {
        cluster.thaw(frozenNode);
      }

      // The first attempt's pipeline found the node's reply missing; the second attempt, on a new connection,
      // failed in its handshake, and carries the first.
      assertThat(failure).isInstanceOf(JedisConnectionException.class);
      assertThat(Stream.concat(Stream.of(failure), Stream.of(failure.getSuppressed())).map(Throwable::getMessage))
          .contains("no reply to XACK on [" + frozen + "] of group 'g': the connection to their node failed during"
              + " the pipeline");
      assertThat(Blame.of(failure)).isEqualTo(Blame.ENVIRONMENT);
      assertThat(pending(live)).isZero();
      // The frozen node still had the XACK in its socket and may apply it once thawed: whether it did is not known,
      // which is why the entry is left to the next acknowledgement (or a reclaim), never counted as acknowledged.
      groups.ackAll(delivered);
      assertThat(pending(live)).isZero();
      assertThat(pending(frozen)).isZero();
    }
  }

  /** Two stream keys of one topic whose slots two different masters own. */
  private static List<String> streamsOnTwoMasters() {
    List<String> out = new ArrayList<>();
    for (int shard = 0; out.size() < 2; shard++) {
      String key = StreamFormat.streamKey("handoff", "acks", shard);
      if (out.isEmpty() || !cluster.nodeForKey(key).equals(cluster.nodeForKey(out.get(0)))) {
        out.add(key);
      }
    }
    return out;
  }

  private static long pending(String stream) {
    try (Jedis node = cluster.admin(cluster.nodeForKey(stream))) {
      return node.xpending(stream, "g").getTotal();
    }
  }
}
