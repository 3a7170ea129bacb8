package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.admin.RewindPlan;
import dev.handoff.consumer.admin.RewindTarget;
import dev.handoff.consumer.admin.StreamAdmin;
import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.core.internal.LuaScript;
import dev.handoff.testing.RedisCluster;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Every Lua script of the consumer module takes keys of one shard only, all in the Redis Cluster slot of the
 * shard's hash tag, and runs on the cluster node that owns that slot through the consumers' own call sites (no
 * CROSSSLOT, no MOVED). The list of scripts is checked against the module's classes and sources, so a new script
 * fails this test until it is added here. The relay's and core's scripts have their own test (the relay module's ScriptSlotsTest).
 */
class ScriptSlotsTest {

  /** Every LuaScript field of the consumer module, by {@code Class.FIELD}. */
  private static final Set<String> SCRIPT_FIELDS = Set.of(
      "PendingEntryScripts.RENEW", "PendingEntryScripts.DEFER", "PendingEntryScripts.COUNTS",
      "PendingEntryScripts.DELETE_IDLE_CONSUMER",
      "ListQueues.TAKE", "ListQueues.ACK", "ListQueues.COUNT_FAILED", "ListQueues.HEARTBEAT", "ListQueues.REAP",
      "ListQueues.LOWEST_HELD", "ListQueues.HOLDERS", "StreamInspector.COUNT_PAGE", "StreamRewinder.REWIND",
      "StreamRewinder.PUT_BACK", "StreamCounts.COUNT_RANGE");
  private static final String TOPIC = "payments";
  private static final int SHARDS = 8;
  private static final JedisClientConfig CONFIG = DefaultJedisClientConfig.builder().resp2().build();

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
  void theListOfScriptsIsComplete() throws Exception {
    Path classes = Path.of(RedisGroups.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    Set<String> fields = new TreeSet<>();
    Map<LuaScript, String> byScript = new IdentityHashMap<>();
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
        String name = classes.relativize(file).toString().replace('/', '.').replaceAll("\\.class$", "");
        Class<?> type = Class.forName(name, false, RedisGroups.class.getClassLoader());
        for (Field field : type.getDeclaredFields()) {
          if (field.getType() == LuaScript.class) {
            String id = type.getSimpleName() + "." + field.getName();
            fields.add(id);
            assertThat(Modifier.isStatic(field.getModifiers())).as(id + " is static").isTrue();
            field.setAccessible(true);
            byScript.put((LuaScript) field.get(null), id);
          }
        }
      }
    }
    assertThat(fields).as("LuaScript fields of the consumer module").isEqualTo(new TreeSet<>(SCRIPT_FIELDS));
    assertThat(factoryCalls(Path.of("src/main/java"))).as("LuaScript/ListScripts factory calls in src/main/java")
        .isEqualTo(SCRIPT_FIELDS.size());
    // The lists the ACL check uses name every script too, so ScriptPermissionsTest covers the same set.
    List<LuaScript> listed = new ArrayList<>(PendingEntryScripts.scripts());
    listed.addAll(ListQueues.consumerScripts());
    listed.addAll(ListQueues.statusScripts());
    listed.addAll(StreamInspector.scripts());
    listed.addAll(StreamRewinder.scripts());
    listed.add(StreamCounts.script());
    List<String> listedFields = listed.stream().map(byScript::get).toList();
    assertThat(listedFields).doesNotContainNull();
    assertThat(new TreeSet<>(listedFields)).isEqualTo(new TreeSet<>(SCRIPT_FIELDS));
  }

  @Test
  void theKeysEachCallSitePassesAreInTheShardsSlot() {
    for (int shard = 0; shard < SHARDS; shard++) {
      String stream = StreamFormat.streamKey("handoff", TOPIC, shard);
      String list = ListFormat.listKey("handoff", TOPIC, shard);
      String processing = ListFormat.processingKey(list, "worker-1");
      int slot = JedisClusterCRC16.getSlot(stream);
      Map<String, List<String>> keysByScript = Map.ofEntries(
          Map.entry("stream-renew", List.of(stream)),
          Map.entry("stream-defer", List.of(stream)),
          Map.entry("stream-delivery-counts", List.of(stream)),
          Map.entry("stream-delete-idle-consumer", List.of(stream)),
          Map.entry("status-count-page", List.of(stream)),
          Map.entry("rewind", List.of(stream)),
          Map.entry("admin-rewind-put-back", List.of(stream)),
          Map.entry("admin-count-range", List.of(stream)),
          Map.entry("list-take", List.of(list, processing, ListFormat.deliveriesKey(list))),
          Map.entry("list-ack", List.of(processing, ListFormat.deliveriesKey(list))),
          Map.entry("list-count-failed", List.of(processing, ListFormat.deliveriesKey(list))),
          Map.entry("list-heartbeat", List.of(ListFormat.heartbeatKey(processing), ListFormat.consumersKey(list))),
          Map.entry("list-reap", List.of(list, ListFormat.consumersKey(list), ListFormat.deliveriesKey(list),
              processing, ListFormat.heartbeatKey(processing))),
          Map.entry("list-watermark", List.of(list, ListFormat.relayKey(list), ListFormat.consumersKey(list),
              processing)),
          Map.entry("list-holders", List.of(list, ListFormat.consumersKey(list), processing,
              ListFormat.heartbeatKey(processing))));
      assertThat(keysByScript.keySet()).as("one entry per script").hasSize(SCRIPT_FIELDS.size());
      keysByScript.forEach((script, keys) -> assertThat(keys).allSatisfy(
          k -> assertThat(JedisClusterCRC16.getSlot(k)).as(script + " key " + k).isEqualTo(slot)));
    }
  }

  @Test
  void theStreamConsumersScriptsRunOnTheNodeThatOwnsTheShard() {
    for (int shard = 0; shard < SHARDS; shard++) {
      String stream = StreamFormat.streamKey("handoff", TOPIC, shard);
      HostAndPort owner = cluster.nodeForKey(stream);
      try (RedisGroups groups = new RedisGroups(owner, cluster.seeds(), CONFIG, "g", 1, Duration.ofMillis(100), Duration.ofSeconds(2));
          Jedis node = cluster.admin(owner)) {
        groups.ensureGroup(stream, true);
        node.xadd(stream, new StreamEntryID(1, 1), Map.of("f", "1"));
        node.xadd(stream, new StreamEntryID(1, 2), Map.of("f", "2"));
        List<String> ids = groups.readNew("c1", List.of(stream), 10, null).stream()
            .map(RedisGroups.RawEntry::id).toList();
        assertThat(ids).containsExactly("1-1", "1-2");

        assertThat(groups.deliveryCounts(stream, "c1", ids)).containsExactly(1, 1);
        assertThat(groups.renew(stream, "c1", ids)).isEmpty();
        assertThat(groups.defer(stream, "c1", Map.of("1-2", 1000L))).isEqualTo(1);
        assertThat(groups.deleteConsumerIfIdle(stream, "c1")).isEqualTo(-1);
        assertThat(new StreamInspector(groups, List.of(stream), "g").countAfter(stream, "0-0", 100))
            .containsExactly(2, 0);
      }
    }
  }

  @Test
  void rewindAndTrimRunOnEveryShardThroughTheClusterClient() {
    try (RedisClusterClient client = cluster.newClient();
        StreamAdmin admin = StreamAdmin.builder(cluster.spec()).keyPrefix("handoff").build()) {
      for (int shard = 0; shard < SHARDS; shard++) {
        String stream = StreamFormat.streamKey("handoff", "rewound", shard);
        client.xgroupCreate(stream, "g", new StreamEntryID(0, 0), true);
        for (int seq = 1; seq <= 3; seq++) {
          client.xadd(stream, new StreamEntryID(1, seq), Map.of("f", Integer.toString(seq)));
        }
        client.xgroupSetID(stream, "g", StreamEntryID.XGROUP_LAST_ENTRY);
      }
      // Found by a SCAN of every node: the streams of one topic are spread over the three masters.
      assertThat(admin.shards("rewound")).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);

      RewindPlan plan = admin.rewind("rewound", "g", RewindTarget.time(Instant.ofEpochMilli(1)), false);
      assertThat(plan.comeAgain()).isEqualTo(3 * SHARDS);
      assertThat(admin.trim("rewound", false).removed()).as("nothing finished after the rewind").isZero();

      for (int shard = 0; shard < SHARDS; shard++) {
        client.xgroupSetID(StreamFormat.streamKey("handoff", "rewound", shard), "g", StreamEntryID.XGROUP_LAST_ENTRY);
      }
      assertThat(admin.trim("rewound", false).removed()).as("all but each group's last-delivered entry")
          .isEqualTo(2 * SHARDS);
      for (int shard = 0; shard < SHARDS; shard++) {
        assertThat(client.xlen(StreamFormat.streamKey("handoff", "rewound", shard))).isEqualTo(1);
      }
    }
  }

  @Test
  void theListConsumersScriptsRunOnTheNodeThatOwnsTheShard() {
    for (int shard = 0; shard < SHARDS; shard++) {
      String list = ListFormat.listKey("handoff", TOPIC, shard);
      String processing = ListFormat.processingKey(list, "worker-1");
      HostAndPort owner = cluster.nodeForKey(list);
      try (ListQueues queues = new ListQueues(owner, cluster.seeds(), CONFIG, 1, Duration.ofMillis(100), Duration.ofSeconds(2));
          Jedis node = cluster.admin(owner)) {
        UUID first = UUID.randomUUID();
        UUID second = UUID.randomUUID();
        node.rpush(bytes(list), element("1-1", first), element("1-2", second));

        queues.heartbeat(list, processing, Duration.ofSeconds(30));
        List<ListQueues.Taken> taken = queues.take(list, processing, 2);
        assertThat(taken).hasSize(2);
        assertThat(queues.countFailed(list, processing, List.of(taken.get(0).element()),
            List.of(first.toString()))).containsExactly(1);
        assertThat(queues.ack(list, processing, List.of(taken.get(1).element()), List.of(second.toString())))
            .isEqualTo(1);
        assertThat(queues.lowestHeld(list)).containsExactly(1, 1);
        ListQueues.Snapshot snapshot = queues.snapshot(list);
        assertThat(snapshot.waiting()).isZero();
        assertThat(snapshot.holders()).singleElement().satisfies(h -> {
          assertThat(h.processingKey()).isEqualTo(processing);
          assertThat(h.length()).isEqualTo(1);
          assertThat(h.alive()).isTrue();
          assertThat(h.oldestId()).isEqualTo("1-1");
        });
        assertThat(queues.reap(list, Duration.ofSeconds(60), processing).returned()).isEqualTo(1);
        assertThat(queues.length(list)).isEqualTo(1);
      }
    }
  }

  private static long factoryCalls(Path sources) throws IOException {
    Pattern call = Pattern.compile("\\b(?:LuaScript|ListScripts)\\.(?:of|resource|runningWhenFull)\\(");
    long count = 0;
    try (Stream<Path> files = Files.walk(sources)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        Matcher m = call.matcher(Files.readString(file));
        while (m.find()) {
          count++;
        }
      }
    }
    return count;
  }

  private static byte[] element(String id, UUID messageId) {
    return ListFormat.encode(id, new StreamMessage(messageId, 1, TOPIC, "payment.created", "k", Map.of(),
        Instant.parse("2026-12-01T00:00:00Z"), bytes("{}")));
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
