package dev.handoff.cli;

import dev.handoff.consumer.admin.TopicStatus;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.OrderedShard;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.core.Transport;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A {@link TopicStatus} as {@code handoff status} shows it: tables for people, or a JSON-ready map. */
final class StatusReport {

  private StatusReport() {}

  /** The topic's tables: the producer and relay side per shard, then one block per group. */
  static List<String> lines(TopicStatus t) {
    List<String> out = new ArrayList<>();
    out.add("topic " + t.topic() + ": " + t.shards().size() + " shard" + (t.shards().size() == 1 ? "" : "s") + ", "
        + (t.transports().isEmpty() ? "nothing published yet" : t.transports().stream()
            .map(x -> x.name().toLowerCase(java.util.Locale.ROOT)).sorted().toList().toString()) + ", outbox depth "
        + String.format("%,d", t.outboxDepth()) + ", oldest unpublished " + age(t.oldestUnpublishedAge()));
    out.add(String.format("  %-5s %12s %12s  %-36s %6s %-8s %10s  %-24s %-24s", "shard", "outbox depth",
        "oldest unpub", "relay lease owner", "epoch", "lease", "stream len", "first entry (age)", "last entry (age)"));
    boolean cluster = t.shards().stream().anyMatch(s -> s.node() != null);
    if (cluster) {
      out.set(out.size() - 1, out.get(out.size() - 1) + "  node (slot)");
    }
    for (TopicStatus.ShardStatus s : t.shards()) {
      TopicStatus.ShardStatus.Lease lease = s.lease();
      TopicStatus.ShardStatus.Stream stream = s.stream();
      out.add(String.format("  %-5d %,12d %12s  %-36s %6d %-8s %,10d  %-24s %-24s", s.shard(), s.outboxDepth(),
          age(s.oldestUnpublishedAge()), lease.owner() == null ? "-" : lease.owner(), lease.epoch(),
          lease.owner() == null ? "-" : lease.live() ? "live" : "expired", stream.length(),
          entry(stream.firstEntryId(), stream.firstEntryAge()), entry(stream.lastEntryId(), stream.lastEntryAge()))
          + (cluster ? "  " + s.node() + " (" + s.slot() + ")" : ""));
    }
    for (TopicStatus.ShardStatus s : t.shards()) {
      if (s.pausedSince() != null) {
        out.add("  shard " + s.shard() + " PAUSED since " + s.pausedSince() + ": the relay found that the database"
            + " went back in time; handoff failover-report --topic " + t.topic() + " shows what it cost, handoff"
            + " resume --topic " + t.topic() + " lets it publish again");
      }
    }
    if (t.streamGroups().isEmpty() && t.transports().contains(Transport.STREAM)) {
      out.add("  no consumer groups on the streams");
    }
    for (ConsumerStatus g : t.streamGroups()) {
      out.add(String.format("  group %s: backlog %,d%s (never delivered), pending %,d (delivered, not"
          + " acknowledged), oldest pending %s, dead letters %,d", g.group(), g.backlog(),
          g.streams().stream().allMatch(ConsumerStatus.StreamStatus::backlogExact) ? "" : "+", g.pending(),
          age(oldestPending(g)), g.deadLetters()));
      for (ConsumerStatus.StreamStatus s : g.streams()) {
        out.add(String.format("    %-28s backlog %,d%s, pending %,d, consumers %s, deliveries %s", s.streamKey(),
            s.backlog(), s.backlogExact() ? "" : "+", s.pending().count(), new TreeMap<>(s.pending().consumers()),
            s.pending().deliveryHistogram()));
      }
      for (OrderedShard o : g.orderedShards()) {
        out.add(String.format("    ordered shard %d: owner %s, epoch %d, position %s%s", o.shard(),
            o.owner() == null ? "none" : o.owner(), o.epoch(), o.position() == null ? "none" : o.position(),
            blockedLine(t.topic(), g.group(), o)));
      }
    }
    for (ListStatus g : t.listGroups()) {
      out.add(String.format("  list group %s: waiting %,d, in processing %,d, dead letters %,d", g.group(),
          g.waiting(), g.inProcessing(), g.deadLetters()));
      for (ListStatus.ShardStatus s : g.shards()) {
        out.add(String.format("    %-33s waiting %,d, in processing %s, oldest in processing %s, capacity %s",
            s.listKey(), s.waiting(), processing(s), age(s.oldestInProcessingAge()),
            s.capacity() < 0 ? "unknown" : String.format("%,d", s.capacity())));
      }
    }
    out.replaceAll(String::stripTrailing);
    return out;
  }

  /** The topic as nested maps and lists, durations in milliseconds, for {@code --json}. */
  static Map<String, Object> toMap(TopicStatus t) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("topic", t.topic());
    m.put("at", t.at().toString());
    m.put("transports", t.transports().stream().map(x -> x.name().toLowerCase(java.util.Locale.ROOT)).sorted()
        .toList());
    m.put("outboxDepth", t.outboxDepth());
    m.put("oldestUnpublishedMillis", millis(t.oldestUnpublishedAge()));
    List<Object> shards = new ArrayList<>();
    for (TopicStatus.ShardStatus s : t.shards()) {
      Map<String, Object> x = new LinkedHashMap<>();
      x.put("shard", s.shard());
      x.put("outboxDepth", s.outboxDepth());
      x.put("oldestUnpublishedMillis", millis(s.oldestUnpublishedAge()));
      Map<String, Object> lease = new LinkedHashMap<>();
      lease.put("owner", s.lease().owner());
      lease.put("epoch", s.lease().epoch());
      lease.put("expiresAt", s.lease().expiresAt() == null ? null : s.lease().expiresAt().toString());
      lease.put("live", s.lease().live());
      lease.put("pausedSince", s.pausedSince() == null ? null : s.pausedSince().toString());
      x.put("lease", lease);
      Map<String, Object> stream = new LinkedHashMap<>();
      stream.put("key", s.stream().key());
      stream.put("exists", s.stream().exists());
      stream.put("length", s.stream().length());
      stream.put("firstEntryId", s.stream().firstEntryId());
      stream.put("firstEntryAgeMillis", millis(s.stream().firstEntryAge()));
      stream.put("lastEntryId", s.stream().lastEntryId());
      stream.put("lastEntryAgeMillis", millis(s.stream().lastEntryAge()));
      x.put("stream", stream);
      if (s.node() != null) {
        x.put("node", s.node());
        x.put("slot", s.slot());
      }
      shards.add(x);
    }
    m.put("shards", shards);
    List<Object> groups = new ArrayList<>();
    for (ConsumerStatus g : t.streamGroups()) {
      Map<String, Object> x = new LinkedHashMap<>();
      x.put("group", g.group());
      x.put("backlog", g.backlog());
      x.put("backlogExact", g.streams().stream().allMatch(ConsumerStatus.StreamStatus::backlogExact));
      x.put("pending", g.pending());
      x.put("oldestPendingMillis", millis(oldestPending(g)));
      x.put("deadLetters", g.deadLetters());
      List<Object> streams = new ArrayList<>();
      for (ConsumerStatus.StreamStatus s : g.streams()) {
        Map<String, Object> y = new LinkedHashMap<>();
        y.put("key", s.streamKey());
        y.put("lastDeliveredId", s.lastDeliveredId());
        y.put("backlog", s.backlog());
        y.put("backlogExact", s.backlogExact());
        y.put("pending", s.pending().count());
        y.put("oldestPendingId", s.pending().oldestId());
        y.put("oldestPendingMillis", millis(s.pending().oldestAge()));
        y.put("consumers", new TreeMap<>(s.pending().consumers()));
        Map<String, Object> histogram = new LinkedHashMap<>();
        s.pending().deliveryHistogram().forEach((deliveries, n) -> histogram.put(String.valueOf(deliveries), n));
        y.put("deliveryHistogram", histogram);
        streams.add(y);
      }
      x.put("streams", streams);
      List<Object> ordered = new ArrayList<>();
      for (OrderedShard o : g.orderedShards()) {
        Map<String, Object> y = new LinkedHashMap<>();
        y.put("shard", o.shard());
        y.put("owner", o.owner());
        y.put("epoch", o.epoch());
        y.put("position", o.position());
        y.put("positionAt", o.positionAt() == null ? null : o.positionAt().toString());
        OrderedShard.Blocked b = o.blocked();
        if (b != null) {
          Map<String, Object> z = new LinkedHashMap<>();
          z.put("streamId", b.streamId());
          z.put("messageId", b.messageId() == null ? null : b.messageId().toString());
          z.put("since", b.since() == null ? null : b.since().toString());
          z.put("deliveries", b.deliveries());
          z.put("stoppedAt", b.stoppedAt() == null ? null : b.stoppedAt().toString());
          z.put("resumeRequested", b.resumeRequested());
          y.put("blocked", z);
        }
        ordered.add(y);
      }
      if (!ordered.isEmpty()) {
        x.put("orderedShards", ordered);
      }
      groups.add(x);
    }
    m.put("groups", groups);
    List<Object> lists = new ArrayList<>();
    for (ListStatus g : t.listGroups()) {
      Map<String, Object> x = new LinkedHashMap<>();
      x.put("group", g.group());
      x.put("waiting", g.waiting());
      x.put("inProcessing", g.inProcessing());
      x.put("deadLetters", g.deadLetters());
      List<Object> shardsOfList = new ArrayList<>();
      for (ListStatus.ShardStatus s : g.shards()) {
        Map<String, Object> y = new LinkedHashMap<>();
        y.put("key", s.listKey());
        y.put("waiting", s.waiting());
        y.put("processing", new TreeMap<>(s.processing()));
        y.put("alive", new TreeMap<>(s.alive()));
        y.put("oldestInProcessingMillis", millis(s.oldestInProcessingAge()));
        y.put("capacity", s.capacity());
        shardsOfList.add(y);
      }
      x.put("shards", shardsOfList);
      lists.add(x);
    }
    m.put("listGroups", lists);
    return m;
  }

  /**
   * Each registered consumer's elements in processing and whether its heartbeat is live, {@code {a-0=2 alive,
   * b-0=3 dead}}: a dead one's elements wait for a reaper (or its restart under the same name).
   */
  private static String processing(ListStatus.ShardStatus s) {
    Map<String, String> consumers = new TreeMap<>();
    s.processing().forEach((consumer, n) -> consumers.put(consumer, n + (Boolean.TRUE.equals(s.alive().get(consumer))
        ? " alive" : " dead")));
    return consumers.toString();
  }

  /** What holds an ordered shard up, and what the operator may do about it; empty while it flows. */
  private static String blockedLine(String topic, String group, OrderedShard o) {
    OrderedShard.Blocked b = o.blocked();
    if (b == null) {
      return "";
    }
    String head = ", " + (b.stoppedAt() != null ? "STOPPED since " + b.stoppedAt() : "BLOCKED since " + b.since())
        + " behind entry " + b.streamId() + " (message " + b.messageId() + ", " + b.deliveries() + " deliveries)";
    if (b.resumeRequested() != null) {
      return head + ", " + b.resumeRequested() + " requested";
    }
    return b.stoppedAt() == null ? head : head + "; handoff ordered resume --group " + group + " --topic " + topic
        + " --shard " + o.shard() + " [--skip]";
  }

  private static Duration oldestPending(ConsumerStatus g) {
    return g.streams().stream().map(s -> s.pending().oldestAge()).filter(d -> d != null)
        .max(Duration::compareTo).orElse(null);
  }

  private static Long millis(Duration d) {
    return d == null ? null : d.toMillis();
  }

  private static String entry(String id, Duration age) {
    return id == null ? "-" : id + " (" + age(age) + ")";
  }

  /** A short age: 850ms, 12.3s, 4m05s, 3h12m. */
  static String age(Duration d) {
    if (d == null) {
      return "-";
    }
    long ms = d.toMillis();
    if (ms < 1_000) {
      return ms + "ms";
    }
    if (ms < 60_000) {
      return String.format("%.1fs", ms / 1000.0);
    }
    long s = ms / 1000;
    if (s < 3600) {
      return String.format("%dm%02ds", s / 60, s % 60);
    }
    return String.format("%dh%02dm", s / 3600, (s % 3600) / 60);
  }

  /** When the report was read, for the watch header. */
  static String header(Instant at, int topics) {
    return "handoff status at " + at + " (" + topics + " topic" + (topics == 1 ? "" : "s") + ")";
  }
}
