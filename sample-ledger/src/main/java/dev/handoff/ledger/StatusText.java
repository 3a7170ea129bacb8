package dev.handoff.ledger;

import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.ledger.LedgerStatus.Group;
import dev.handoff.ledger.LedgerStatus.Lists;
import dev.handoff.ledger.LedgerStatus.Shard;
import dev.handoff.ledger.LedgerStatus.Snapshot;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** {@code status} for people: a {@link LedgerStatus.Snapshot} as the tables it prints. */
final class StatusText {

  private StatusText() {}

  /** One table for the producer side, one per group. */
  static List<String> lines(Snapshot snap) {
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
            ss.pending().count(), age(ss.pending().oldestAge()), consumers(ss.pending().consumers()),
            histogram(ss.pending())));
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
      new TreeMap<>(ss.processing()).forEach((name, n) -> holders.append(holders.length() == 0 ? "" : ", ")
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
    new TreeMap<>(consumers).forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k)
        .append('=').append(v));
    return b.toString();
  }

  private static String histogram(ConsumerStatus.StreamStatus.Pending pending) {
    if (pending.deliveryHistogram().isEmpty()) {
      return "-";
    }
    StringBuilder b = new StringBuilder();
    pending.deliveryHistogram().forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k).append("x: ")
        .append(v));
    return b.toString();
  }

  private static String entry(String id, Instant now) {
    if (id == null) {
      return "-";
    }
    return id + " (" + age(Duration.ofMillis(LedgerStatus.ageMillis(id, now))) + ")";
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
