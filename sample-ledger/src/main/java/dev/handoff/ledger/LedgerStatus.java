package dev.handoff.ledger;

import dev.handoff.consumer.ConsumerStatus;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.ListStatus;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.migrations.SchemaNames;
import dev.handoff.outbox.ListFormat;
import dev.handoff.outbox.RelayBuilder;
import dev.handoff.outbox.StreamFormat;
import dev.handoff.outbox.Transport;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import javax.sql.DataSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;
import redis.clients.jedis.resps.StreamGroupInfo;

/**
 * The numbers of design section 6 for the payments topic, gathered from PostgreSQL and Redis: per shard the outbox
 * depth and oldest unpublished age, the relay lease, the stream's length and first/last entries; per consumer group
 * the backlog (never delivered), pending (delivered, not acknowledged) and its oldest age, consumers, the
 * delivery-count histogram, dead letters and duplicates skipped. Backlog and pending answer different questions
 * ({@code XPENDING} can be 0 while thousands of entries were never delivered), so they are never added together.
 *
 * <p>On the list transport: per shard waiting ({@code LLEN}), in processing per consumer (alive or not), the oldest
 * element in processing and its age, the relay's capacity and the outbox backlog (the two bounds: the capacity
 * covers waiting plus in processing, the outbox holds the rest), and the group's dead letters. Which transport is
 * shown: the one asked for, or (auto) whichever has keys in Redis, both when both have.
 */
public final class LedgerStatus {

  private LedgerStatus() {}

  /** One shard's producer and relay side. */
  public record Shard(int shard, String streamKey, long outboxDepth, Duration oldestUnpublished, String leaseOwner,
      long leaseEpoch, boolean leaseLive, boolean streamExists, long streamLength, String firstEntryId,
      String lastEntryId) {}

  /** One consumer group: handoff's status plus the counters the ledger's consumers record. */
  public record Group(String name, ConsumerStatus status, long deliveries, long duplicatesSkipped, long reclaimed,
      boolean countersRecorded) {}

  /**
   * The list transport's side: handoff's list status for one group plus the counters its ledger consumers record.
   */
  public record Lists(ListStatus status, long deliveries, long duplicatesSkipped, long reclaimed,
      boolean countersRecorded) {}

  /**
   * Everything {@code status} shows.
   *
   * @param streams whether the stream side (stream columns, groups) is shown
   * @param lists the list side, or {@code null} when it is not shown
   */
  public record Snapshot(String schema, String keyPrefix, Instant at, List<Shard> shards, List<Group> groups,
      boolean streams, Lists lists, RetentionStatus retention) {}

  /** Reads the status of the payments topic on the streams. */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix) {
    return collect(dataSource, redis, redisServer, redisConfig, schema, keyPrefix, Transport.STREAM,
        LedgerConsumer.DEFAULT_GROUP);
  }

  /** Whether Redis holds any of the list transport's keys for the payments topic under {@code keyPrefix}. */
  public static boolean listKeysExist(UnifiedJedis redis, String keyPrefix) {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(keyPrefix, PaymentEvents.TOPIC, shard);
      if (redis.exists(list) || redis.exists(ListFormat.relayKey(list)) || redis.exists(ListFormat.consumersKey(list))) {
        return true;
      }
    }
    return false;
  }

  /** Whether Redis holds any stream of the payments topic under {@code keyPrefix}. */
  public static boolean streamsExist(UnifiedJedis redis, String keyPrefix) {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      if (redis.exists(StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Reads the status of the payments topic.
   *
   * @param transport the transport to show, or {@code null} for whichever has keys in Redis (both when both have,
   *     streams when neither has)
   * @param listGroup the consumer group whose list status (dead letters, counters) is shown
   */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix, Transport transport, String listGroup) {
    return collect(dataSource, redis, redisServer, redisConfig, schema, keyPrefix, transport, listGroup,
        RelayBuilder.DEFAULT_OUTBOX_RETENTION);
  }

  /** As above, with the purge lag measured against the relays' {@code outboxRetention}. */
  public static Snapshot collect(DataSource dataSource, UnifiedJedis redis, HostAndPort redisServer,
      JedisClientConfig redisConfig, String schema, String keyPrefix, Transport transport, String listGroup,
      Duration outboxRetention) {
    String s = SchemaNames.requireValid(schema);
    boolean showLists = transport == Transport.LIST || transport == null && listKeysExist(redis, keyPrefix);
    boolean showStreams = transport == Transport.STREAM
        || transport == null && (!showLists || streamsExist(redis, keyPrefix));
    Instant now = Instant.now();
    List<Shard> shards = new ArrayList<>();
    TreeSet<String> groupNames = new TreeSet<>();
    try (Connection c = dataSource.getConnection()) {
      Map<Integer, Object[]> depth = new LinkedHashMap<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT shard, count(*), min(created_at) FROM " + s
          + ".outbox WHERE topic = ? AND published_at IS NULL GROUP BY shard")) {
        ps.setString(1, PaymentEvents.TOPIC);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            depth.put(rs.getInt(1), new Object[] {rs.getLong(2), rs.getTimestamp(3)});
          }
        }
      }
      Map<Integer, Object[]> leases = new LinkedHashMap<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT shard, owner, epoch, expires_at > clock_timestamp()"
          + " FROM " + s + ".relay_lease WHERE topic = ?")) {
        ps.setString(1, PaymentEvents.TOPIC);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            leases.put(rs.getInt(1), new Object[] {rs.getString(2), rs.getLong(3), rs.getBoolean(4)});
          }
        }
      }
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String key = StreamFormat.streamKey(keyPrefix, PaymentEvents.TOPIC, shard);
        Object[] d = depth.getOrDefault(shard, new Object[] {0L, null});
        Object[] l = leases.getOrDefault(shard, new Object[] {null, 0L, false});
        Timestamp oldest = (Timestamp) d[1];
        boolean exists = redis.exists(key);
        long length = exists ? redis.xlen(key) : 0;
        String first = null;
        String last = null;
        if (length > 0) {
          List<StreamEntry> f = redis.xrange(key, "-", "+", 1);
          List<StreamEntry> z = redis.xrevrange(key, "+", "-", 1);
          first = f.isEmpty() ? null : f.get(0).getID().toString();
          last = z.isEmpty() ? null : z.get(0).getID().toString();
        }
        if (exists && showStreams) {
          for (StreamGroupInfo g : redis.xinfoGroups(key)) {
            groupNames.add(g.getName());
          }
        }
        shards.add(new Shard(shard, key, (Long) d[0],
            oldest == null ? null : Duration.between(oldest.toInstant(), now).abs(), (String) l[0], (Long) l[1],
            (Boolean) l[2], exists, length, first, last));
      }
      List<Group> groups = new ArrayList<>();
      for (String name : groupNames) {
        ConsumerStatus status;
        try (StreamConsumer probe = StreamConsumer.builder(dataSource, redisServer)
            .redisConfig(redisConfig)
            .schema(schema)
            .keyPrefix(keyPrefix)
            .topic(PaymentEvents.TOPIC_CONFIG)
            .group(name)
            .batchHandler((tx, messages) -> {
              throw new IllegalStateException("status never handles messages");
            })
            .build()) {
          status = probe.status();
        }
        long[] counters = {0, 0, 0};
        boolean recorded = false;
        try (PreparedStatement ps = c.prepareStatement("SELECT deliveries, duplicates_skipped, reclaimed FROM " + s
            + ".consumer_stats WHERE consumer_group = ?")) {
          ps.setString(1, name);
          try (ResultSet rs = ps.executeQuery()) {
            if (rs.next()) {
              recorded = true;
              counters = new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)};
            }
          }
        }
        groups.add(new Group(name, status, counters[0], counters[1], counters[2], recorded));
      }
      Lists lists = null;
      if (showLists) {
        ListStatus status;
        try (ListConsumer probe = ListConsumer.builder(dataSource, redisServer)
            .redisConfig(redisConfig)
            .schema(schema)
            .keyPrefix(keyPrefix)
            .topic(PaymentEvents.TOPIC_CONFIG)
            .group(listGroup)
            .batchHandler((tx, messages) -> {
              throw new IllegalStateException("status never handles messages");
            })
            .build()) {
          status = probe.status(); // never started: no heartbeat, no registration, nothing taken
        }
        long[] counters = counters(c, s, listGroup);
        lists = new Lists(status, counters[0], counters[1], counters[2], counters != NO_COUNTERS);
      }
      RetentionStatus retention = RetentionStatus.read(c, s, redis, keyPrefix, PaymentEvents.SHARDS,
          outboxRetention, showStreams);
      return new Snapshot(schema, keyPrefix, now, shards, groups, showStreams, lists, retention);
    } catch (SQLException e) {
      throw new LedgerException("could not read the status: " + e.getMessage(), e);
    }
  }

  private static final long[] NO_COUNTERS = {0, 0, 0};

  private static long[] counters(Connection c, String schema, String group) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT deliveries, duplicates_skipped, reclaimed FROM " + schema
        + ".consumer_stats WHERE consumer_group = ?")) {
      ps.setString(1, group);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)} : NO_COUNTERS;
      }
    }
  }

  /** The snapshot as a JSON-ready map. */
  public static Map<String, Object> toMap(Snapshot snap) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("schema", snap.schema());
    m.put("key_prefix", snap.keyPrefix());
    m.put("topic", PaymentEvents.TOPIC);
    m.put("at", snap.at().toString());
    m.put("transports", snap.lists() == null ? List.of("stream")
        : snap.streams() ? List.of("stream", "list") : List.of("list"));
    List<Object> shards = new ArrayList<>();
    for (Shard s : snap.shards()) {
      Map<String, Object> x = new LinkedHashMap<>();
      x.put("shard", s.shard());
      x.put("stream", s.streamKey());
      x.put("outbox_depth", s.outboxDepth());
      x.put("oldest_unpublished_ms", s.oldestUnpublished() == null ? null : s.oldestUnpublished().toMillis());
      x.put("lease_owner", s.leaseOwner());
      x.put("lease_epoch", s.leaseEpoch());
      x.put("lease_live", s.leaseLive());
      x.put("stream_exists", s.streamExists());
      x.put("stream_length", s.streamLength());
      x.put("first_entry", s.firstEntryId());
      x.put("first_entry_age_ms", ageMillis(s.firstEntryId(), snap.at()));
      x.put("last_entry", s.lastEntryId());
      x.put("last_entry_age_ms", ageMillis(s.lastEntryId(), snap.at()));
      shards.add(x);
    }
    m.put("shards", shards);
    m.put("retention", snap.retention().toMap());
    List<Object> groups = new ArrayList<>();
    for (Group g : snap.groups()) {
      Map<String, Object> x = new LinkedHashMap<>();
      ConsumerStatus st = g.status();
      x.put("group", g.name());
      x.put("backlog", st.backlog());
      x.put("pending", st.pending());
      x.put("dead_letters", st.deadLetters());
      x.put("deliveries", g.countersRecorded() ? g.deliveries() : null);
      x.put("duplicates_skipped", g.countersRecorded() ? g.duplicatesSkipped() : null);
      x.put("reclaimed", g.countersRecorded() ? g.reclaimed() : null);
      List<Object> per = new ArrayList<>();
      for (ConsumerStatus.StreamStatus ss : st.streams()) {
        Map<String, Object> y = new LinkedHashMap<>();
        y.put("stream", ss.streamKey());
        y.put("group_exists", ss.groupExists());
        y.put("last_delivered", ss.lastDeliveredId());
        y.put("backlog", ss.backlog());
        y.put("backlog_exact", ss.backlogExact());
        y.put("pending", ss.pending());
        y.put("oldest_pending", ss.oldestPendingId());
        y.put("oldest_pending_age_ms", ss.oldestPendingAge() == null ? null : ss.oldestPendingAge().toMillis());
        y.put("consumers", ss.consumers());
        y.put("delivery_histogram", ss.deliveryHistogram());
        per.add(y);
      }
      x.put("shards", per);
      groups.add(x);
    }
    m.put("groups", groups);
    if (snap.lists() != null) {
      m.put("lists", listsMap(snap.lists()));
    }
    return m;
  }

  private static Map<String, Object> listsMap(Lists lists) {
    ListStatus st = lists.status();
    Map<String, Object> x = new LinkedHashMap<>();
    x.put("group", st.group());
    x.put("waiting", st.waiting());
    x.put("in_processing", st.inProcessing());
    x.put("outbox_backlog", st.outboxBacklog());
    x.put("dead_letters", st.deadLetters());
    x.put("deliveries", lists.countersRecorded() ? lists.deliveries() : null);
    x.put("duplicates_skipped", lists.countersRecorded() ? lists.duplicatesSkipped() : null);
    x.put("reclaimed", lists.countersRecorded() ? lists.reclaimed() : null);
    List<Object> per = new ArrayList<>();
    for (int i = 0; i < st.shards().size(); i++) {
      ListStatus.ShardStatus ss = st.shards().get(i);
      Map<String, Object> y = new LinkedHashMap<>();
      y.put("shard", i);
      y.put("list", ss.listKey());
      y.put("capacity", ss.capacity() < 0 ? null : ss.capacity());
      y.put("waiting", ss.waiting());
      y.put("in_processing", ss.inProcessing());
      y.put("outbox_backlog", ss.outboxBacklog());
      List<Object> consumers = new ArrayList<>();
      new java.util.TreeMap<>(ss.processing()).forEach((name, n) -> {
        Map<String, Object> z = new LinkedHashMap<>();
        z.put("consumer", name);
        z.put("in_processing", n);
        z.put("alive", Boolean.TRUE.equals(ss.alive().get(name)));
        consumers.add(z);
      });
      y.put("consumers", consumers);
      y.put("oldest_in_processing", ss.oldestInProcessingId());
      y.put("oldest_in_processing_age_ms",
          ss.oldestInProcessingAge() == null ? null : ss.oldestInProcessingAge().toMillis());
      y.put("last_pushed", ss.lastPushedId());
      per.add(y);
    }
    x.put("shards", per);
    return x;
  }

  /** The snapshot for people: one table for the producer side, one per group. */
  public static List<String> lines(Snapshot snap) {
    List<String> out = new ArrayList<>();
    out.add("topic " + PaymentEvents.TOPIC + " (" + PaymentEvents.SHARDS + " shards), schema " + snap.schema()
        + ", key prefix " + snap.keyPrefix());
    out.add("");
    if (!snap.streams()) {
      out.add(String.format("%-5s %12s %12s  %-36s %6s", "shard", "outbox depth", "oldest unpub",
          "relay lease owner", "epoch"));
      for (Shard s : snap.shards()) {
        out.add(String.format("%-5d %,12d %12s  %-36s %6d", s.shard(), s.outboxDepth(), age(s.oldestUnpublished()),
            lease(s), s.leaseEpoch()));
      }
      out.addAll(snap.retention().lines(Map.of()));
      listLines(snap.lists(), out);
      return out;
    }
    out.add(String.format("%-5s %12s %12s  %-36s %6s %10s  %-22s %-22s", "shard", "outbox depth", "oldest unpub",
        "relay lease owner", "epoch", "stream len", "first entry (age)", "last entry (age)"));
    for (Shard s : snap.shards()) {
      out.add(String.format("%-5d %,12d %12s  %-36s %6d %,10d  %-22s %-22s", s.shard(), s.outboxDepth(),
          age(s.oldestUnpublished()), lease(s), s.leaseEpoch(), s.streamLength(), entry(s.firstEntryId(), snap.at()),
          entry(s.lastEntryId(), snap.at())));
    }
    Map<Integer, Long> lengths = new LinkedHashMap<>();
    snap.shards().forEach(x -> lengths.put(x.shard(), x.streamLength()));
    out.addAll(snap.retention().lines(lengths));
    if (snap.groups().isEmpty()) {
      out.add("");
      out.add("no consumer groups yet");
    }
    for (Group g : snap.groups()) {
      ConsumerStatus st = g.status();
      out.add("");
      out.add("group " + g.name() + ": backlog " + String.format("%,d", st.backlog()) + " (never delivered), pending "
          + String.format("%,d", st.pending()) + " (delivered, not acknowledged), dead letters " + st.deadLetters()
          + ", " + (g.countersRecorded()
              ? String.format("deliveries %,d, duplicates skipped %,d, reclaimed %,d", g.deliveries(),
                  g.duplicatesSkipped(), g.reclaimed())
              : "no counters recorded (not a ledger consumer)"));
      out.add(String.format("  %-5s %10s %10s %14s  %-30s %s", "shard", "backlog", "pending", "oldest pending",
          "consumers (pending)", "deliveries: entries"));
      for (int i = 0; i < st.streams().size(); i++) {
        ConsumerStatus.StreamStatus ss = st.streams().get(i);
        out.add(String.format("  %-5d %,10d%s %,10d %14s  %-30s %s", i, ss.backlog(), ss.backlogExact() ? " " : "+",
            ss.pending(), age(ss.oldestPendingAge()), consumers(ss.consumers()), histogram(ss)));
      }
    }
    if (snap.lists() != null) {
      listLines(snap.lists(), out);
    }
    return out;
  }

  private static void listLines(Lists lists, List<String> out) {
    ListStatus st = lists.status();
    out.add("");
    out.add(String.format("lists, group %s: waiting %,d (pushed, not taken), in processing %,d (taken, not finished),"
        + " outbox backlog %s (committed, not pushed), dead letters %d, %s", st.group(), st.waiting(),
        st.inProcessing(), st.outboxBacklog() < 0 ? "unknown" : String.format("%,d", st.outboxBacklog()),
        st.deadLetters(), lists.countersRecorded()
            ? String.format("deliveries %,d, duplicates skipped %,d, reclaimed %,d", lists.deliveries(),
                lists.duplicatesSkipped(), lists.reclaimed())
            : "no counters recorded"));
    out.add("  the capacity bounds waiting + in processing per shard; the outbox backlog is the rest");
    out.add(String.format("  %-5s %10s %10s %10s %12s  %-26s %-22s %s", "shard", "capacity", "waiting", "in proc",
        "outbox", "oldest in processing (age)", "last pushed", "consumers (in processing, alive)"));
    for (int i = 0; i < st.shards().size(); i++) {
      ListStatus.ShardStatus ss = st.shards().get(i);
      String oldest = ss.oldestInProcessingId() == null ? "-"
          : ss.oldestInProcessingId() + " (" + age(ss.oldestInProcessingAge()) + ")";
      StringBuilder holders = new StringBuilder();
      new java.util.TreeMap<>(ss.processing()).forEach((name, n) -> holders.append(holders.length() == 0 ? "" : ", ")
          .append(name).append('=').append(n).append(Boolean.TRUE.equals(ss.alive().get(name)) ? " alive"
              : " dead"));
      out.add(String.format("  %-5d %10s %,10d %,10d %12s  %-26s %-22s %s", i,
          ss.capacity() < 0 ? "-" : String.format("%,d", ss.capacity()), ss.waiting(), ss.inProcessing(),
          ss.outboxBacklog() < 0 ? "?" : String.format("%,d", ss.outboxBacklog()), oldest,
          ss.lastPushedId() == null ? "-" : ss.lastPushedId(), holders.length() == 0 ? "-" : holders));
    }
  }

  private static String lease(Shard s) {
    if (s.leaseOwner() == null) {
      return "(none)";
    }
    String owner = s.leaseOwner().length() > 28 ? s.leaseOwner().substring(0, 28) : s.leaseOwner();
    return owner + (s.leaseLive() ? " live" : " expired");
  }

  private static String consumers(Map<String, Long> consumers) {
    if (consumers.isEmpty()) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    new java.util.TreeMap<>(consumers).forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k)
        .append('=').append(v));
    return b.toString();
  }

  private static String histogram(ConsumerStatus.StreamStatus ss) {
    if (ss.deliveryHistogram().isEmpty()) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    ss.deliveryHistogram().forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k).append("x: ")
        .append(v));
    return b.toString();
  }

  private static String entry(String id, Instant now) {
    if (id == null) {
      return "-";
    }
    return id + " (" + age(Duration.ofMillis(ageMillis(id, now))) + ")";
  }

  private static Long ageMillis(String id, Instant now) {
    if (id == null) {
      return null;
    }
    return Math.max(0, now.toEpochMilli() - Long.parseLong(id.substring(0, id.indexOf('-'))));
  }

  static String age(Duration d) {
    if (d == null) {
      return "-";
    }
    long ms = d.toMillis();
    if (ms < 10_000) {
      return String.format("%.1fs", ms / 1000.0);
    }
    if (ms < 60_000) {
      return (ms / 1000) + "s";
    }
    if (ms < 3_600_000) {
      return (ms / 60_000) + "m" + (ms / 1000 % 60) + "s";
    }
    return (ms / 3_600_000) + "h" + (ms / 60_000 % 60) + "m";
  }
}
