package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.internal.ListScripts;
import dev.handoff.core.internal.LuaScript;
import dev.handoff.core.internal.StreamId;
import dev.handoff.core.internal.StreamTrimScript;
import dev.handoff.testing.ModuleClasses;
import dev.handoff.testing.RedisCluster;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Every Lua script of the relay and core modules touches the keys of one shard only, all in the Redis Cluster slot of the
 * shard's hash tag {@code {topic:shard}}, and Redis Cluster itself accepts each one with those keys (no CROSSSLOT,
 * no MOVED). The script list is checked against the module's classes and sources, so a new script fails this test
 * until it is added here. The consumer module's scripts have their own test.
 */
class ScriptSlotsTest {

  /** Every field of type LuaScript in the relay's and core's classes, by {@code Class.field}. */
  private static final Set<String> SCRIPT_FIELDS = Set.of(
      "RedisStreams.publish", "StreamTrimScript.TRIM", "EntryRepairer.GONE", "RedisLists.push", "RedisLists.room",
      "RedisLists.watermark");
  private static final String TOPIC = "payments";
  private static final int SHARDS = 8;

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
    Set<String> fields = new TreeSet<>();
    Set<String> resources = new TreeSet<>();
    for (Class<?> module : List.of(LuaScript.class, RedisStreams.class)) {
      for (String name : ModuleClasses.classNames(module)) {
        for (Field field : Class.forName(name, false, module.getClassLoader()).getDeclaredFields()) {
          if (field.getType() == LuaScript.class) {
            fields.add(field.getDeclaringClass().getSimpleName() + "." + field.getName());
          }
        }
      }
      String scriptsFolder = module.getPackageName().replace(".internal", "").replace('.', '/');
      ModuleClasses.fileNames(module, scriptsFolder).stream()
          .filter(f -> f.endsWith(".lua") && !f.equals("list-header.lua"))
          .forEach(f -> resources.add(f.substring(0, f.length() - 4)));
    }
    assertThat(fields).as("LuaScript fields of the relay and core modules").isEqualTo(new TreeSet<>(SCRIPT_FIELDS));
    // A script made inline rather than kept in a field would escape the scan above: count the factory calls too.
    assertThat(factoryCalls(Path.of("src/main/java")) + factoryCalls(Path.of("../core/src/main/java")))
        .as("LuaScript/ListScripts factory calls in the relay's and core's src/main/java")
        .isEqualTo(SCRIPT_FIELDS.size());
    assertThat(scripts().values().stream().map(LuaScript::name).toList())
        .as("every .lua resource is one of the scripts checked").containsExactlyInAnyOrderElementsOf(resources);
  }

  @Test
  void everyKeyOfAShardHashesToTheSlotOfItsStreamKey() {
    for (int shard = 0; shard < SHARDS; shard++) {
      String stream = StreamFormat.streamKey("handoff", TOPIC, shard);
      int slot = JedisClusterCRC16.getSlot(stream);
      assertThat(slot).isEqualTo(JedisClusterCRC16.getSlot(TOPIC + ":" + shard));
      for (String key : shardKeys(stream, ListFormat.listKey("handoff", TOPIC, shard))) {
        assertThat(JedisClusterCRC16.getSlot(key)).as(key).isEqualTo(slot);
      }
    }
  }

  @Test
  void everyScriptRunsOnTheNodeThatOwnsTheShardWithTheKeysTheTransportsPass() {
    Map<String, LuaScript> scripts = scripts();
    for (int shard = 0; shard < SHARDS; shard++) {
      String stream = StreamFormat.streamKey("handoff", TOPIC, shard);
      String list = ListFormat.listKey("handoff", TOPIC, shard);
      HostAndPort owner = cluster.nodeForKey(stream);
      try (RedisClient node = nodeClient(owner)) {
        // A registered processing list with an element: the list scripts read it without it being in KEYS.
        String processing = ListFormat.processingKey(list, "c1");
        node.hset(ListFormat.consumersKey(list), processing, "0");
        node.rpush(processing.getBytes(StandardCharsets.UTF_8), element("1-1"));
        node.set(ListFormat.heartbeatKey(processing), "1");

        List<byte[]> streamKeys = keys(stream, StreamFormat.relayKey(stream));
        List<byte[]> listKeys = keys(list, ListFormat.relayKey(list), ListFormat.consumersKey(list));
        List<?> published = (List<?>) scripts.get("RedisStreams.publish").run(node, streamKeys,
            List.of(b("0"), b("5-1"), b(UUID.randomUUID().toString()), b("2"), b("f"), b("v")));
        assertThat(published).isEqualTo(List.of(1L, 1L));
        List<?> trimmed = (List<?>) scripts.get("StreamTrimScript.TRIM").run(node, keys(stream),
            List.of(b("0-1"), b("10")));
        assertThat(trimmed).hasSize(5);
        List<?> probe = (List<?>) scripts.get("EntryRepairer.GONE").run(node, keys(stream), List.of(b("probe")));
        assertThat(probe).hasSize(2).first().isEqualTo(1L);
        List<?> gone = (List<?>) scripts.get("EntryRepairer.GONE").run(node, keys(stream),
            List.of(b("any"), b(""), b("5-1"), b("6-1")));
        assertThat(gone).hasSize(3).last().satisfies(id -> assertThat(new String((byte[]) id, StandardCharsets.UTF_8))
            .isEqualTo("6-1"));
        assertThat((Long) scripts.get("RedisLists.room").run(node, listKeys, List.of(b("100")))).isEqualTo(99L);
        List<?> pushed = (List<?>) scripts.get("RedisLists.push").run(node, listKeys,
            List.of(b("0"), b("100"), b("2"), b("1"), element("2-1")));
        assertThat(pushed).isEqualTo(List.of(1L, 98L, 1L));
        List<?> watermark = (List<?>) scripts.get("RedisLists.watermark").run(node, listKeys, List.of());
        assertThat(new String((byte[]) watermark.get(0), StandardCharsets.UTF_8)).isEqualTo("1-1");
      }
    }
  }

  @Test
  void theTransportsRunTheirScriptsThroughTheClusterClient() {
    try (RedisClusterClient client = cluster.newClient()) {
      RedisStreams streams = new RedisStreams(client);
      RedisLists lists = new RedisLists(client, 1000);
      for (int shard = 0; shard < SHARDS; shard++) {
        ShardId id = new ShardId(TOPIC, shard);
        String stream = streams.key("cluster", id);
        String relay = streams.relayKey(stream);
        List<OutboxRow> rows = List.of(row(1, new StreamId(10, 1)), row(2, new StreamId(10, 2)));
        RedisTransport.PublishResult result = streams.publish(stream, relay, 0, rows);
        assertThat(result.lost()).isFalse();
        assertThat(result.entriesAdded()).isEqualTo(2);
        // MINID with '~' evicts whole radix tree nodes only: two entries stay; the point is that the script ran.
        assertThat(streams.trim(stream, relay, new StreamId(10, 1), null, 100).length()).isEqualTo(2);
        assertThat(streams.lastGeneratedId(stream, relay)).isEqualTo(new StreamId(10, 2));

        String list = lists.key("cluster", id);
        String listRelay = lists.relayKey(list);
        assertThat(lists.room(list, listRelay)).isEqualTo(1000);
        assertThat(lists.publish(list, listRelay, 0, rows).entriesAdded()).isEqualTo(2);
        assertThat(lists.trim(list, listRelay, StreamId.ZERO, null, 100).minId()).isEqualTo("10-1");
        assertThat(lists.lastGeneratedId(list, listRelay)).isEqualTo(new StreamId(10, 2));
      }
    }
  }

  @Test
  void aKeyOfAnotherShardIsRefusedByTheClusterSoTheRunsAboveProveSomething() {
    String stream = StreamFormat.streamKey("handoff", TOPIC, 0);
    String otherRelay = StreamFormat.relayKey(StreamFormat.streamKey("handoff", TOPIC, 1));
    assertThat(JedisClusterCRC16.getSlot(otherRelay)).isNotEqualTo(JedisClusterCRC16.getSlot(stream));
    try (RedisClient node = nodeClient(cluster.nodeForKey(stream))) {
      assertThatThrownBy(() -> scripts().get("RedisStreams.publish").run(node, keys(stream, otherRelay),
          List.of(b("0"))))
          .isInstanceOf(JedisDataException.class)
          .hasMessageContaining("CROSSSLOT");
    }
  }

  @Test
  void theShardsOfATopicSpreadOverTheMasters() {
    // The table of docs/scaling.md: topic payments, shards 0..7, three masters with an even split.
    List<Integer> slots = new ArrayList<>();
    List<Integer> masters = new ArrayList<>();
    for (int shard = 0; shard < SHARDS; shard++) {
      int slot = JedisClusterCRC16.getSlot(StreamFormat.streamKey("handoff", TOPIC, shard));
      slots.add(slot);
      masters.add(cluster.masters().indexOf(cluster.nodeForSlot(slot)) + 1);
    }
    assertThat(slots).containsExactly(EXPECTED_SLOTS);
    assertThat(masters).containsExactly(EXPECTED_MASTERS);
  }

  private static final Integer[] EXPECTED_SLOTS = {9006, 13071, 876, 4941, 9130, 13195, 1000, 5065};
  /** 1 owns slots 0-5460, 2 owns 5461-10921, 3 owns 10922-16383. */
  private static final Integer[] EXPECTED_MASTERS = {2, 3, 1, 1, 2, 3, 1, 1};

  /** Every key a shard uses, stream and list transport alike. */
  static List<String> shardKeys(String stream, String list) {
    String processing = ListFormat.processingKey(list, "worker-1");
    return List.of(stream, StreamFormat.relayKey(stream), list, ListFormat.relayKey(list),
        ListFormat.consumersKey(list), ListFormat.deliveriesKey(list), processing, ListFormat.heartbeatKey(processing));
  }

  /** The scripts of {@link #SCRIPT_FIELDS}, read from the transports' own fields. */
  private static Map<String, LuaScript> scripts() {
    Map<String, LuaScript> scripts = new TreeMap<>();
    for (Object transport : List.of(new RedisStreams(null), new RedisLists(null, 1))) {
      for (Field field : transport.getClass().getDeclaredFields()) {
        if (field.getType() == LuaScript.class) {
          field.setAccessible(true);
          try {
            scripts.put(transport.getClass().getSimpleName() + "." + field.getName(), (LuaScript) field.get(transport));
          } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
          }
        }
      }
    }
    // The scripts kept in static fields, shared by the relay and the operator's tools.
    for (Class<?> holder : List.of(StreamTrimScript.class, EntryRepairer.class)) {
      for (Field field : holder.getDeclaredFields()) {
        if (field.getType() == LuaScript.class && java.lang.reflect.Modifier.isStatic(field.getModifiers())) {
          field.setAccessible(true);
          try {
            scripts.put(holder.getSimpleName() + "." + field.getName(), (LuaScript) field.get(null));
          } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
          }
        }
      }
    }
    assertThat(scripts.keySet()).isEqualTo(new TreeSet<>(SCRIPT_FIELDS));
    return scripts;
  }

  static long factoryCalls(Path sources) throws IOException {
    Pattern call = Pattern.compile("\\b(?:LuaScript|ListScripts)\\.(?:of|resource|runningWhenFull)\\(");
    long count = 0;
    try (Stream<Path> files = Files.walk(sources)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        String name = file.getFileName().toString();
        if (name.equals("LuaScript.java") || name.equals("ListScripts.java")) {
          continue; // the factories themselves
        }
        Matcher m = call.matcher(Files.readString(file));
        while (m.find()) {
          count++;
        }
      }
    }
    return count;
  }

  private static RedisClient nodeClient(HostAndPort node) {
    return RedisClient.builder().hostAndPort(node)
        .clientConfig(DefaultJedisClientConfig.builder().resp2().build()).build();
  }

  private static OutboxRow row(long id, StreamId streamId) {
    return new OutboxRow(id, UUID.randomUUID(), TOPIC, "k" + id, "payment.created",
        "{}".getBytes(StandardCharsets.UTF_8), "{}", Instant.parse("2026-12-01T00:00:00Z"), streamId);
  }

  private static byte[] element(String id) {
    return ListFormat.encode(id, row(1, StreamId.parse(id)).toMessage());
  }

  private static List<byte[]> keys(String... keys) {
    return Stream.of(keys).map(ScriptSlotsTest::b).toList();
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
