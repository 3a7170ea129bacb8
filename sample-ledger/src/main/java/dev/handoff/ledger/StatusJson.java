package dev.handoff.ledger;

import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.ledger.LedgerStatus.Group;
import dev.handoff.ledger.LedgerStatus.Lists;
import dev.handoff.ledger.LedgerStatus.Shard;
import dev.handoff.ledger.LedgerStatus.Snapshot;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** {@code status --json}: a {@link LedgerStatus.Snapshot} as maps and lists, in the order they are printed. */
final class StatusJson {

  private StatusJson() {}

  /** The snapshot as a JSON-ready map. */
  static Map<String, Object> toMap(Snapshot snap) {
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
      x.put("first_entry_age_ms", LedgerStatus.ageMillis(s.firstEntryId(), snap.at()));
      x.put("last_entry", s.lastEntryId());
      x.put("last_entry_age_ms", LedgerStatus.ageMillis(s.lastEntryId(), snap.at()));
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
      putCounters(x, g.countersRecorded(), g.deliveries(), g.duplicatesSkipped(), g.reclaimed());
      List<Object> per = new ArrayList<>();
      for (ConsumerStatus.StreamStatus ss : st.streams()) {
        Map<String, Object> y = new LinkedHashMap<>();
        y.put("stream", ss.streamKey());
        y.put("group_exists", ss.groupExists());
        y.put("last_delivered", ss.lastDeliveredId());
        y.put("backlog", ss.backlog());
        y.put("backlog_exact", ss.backlogExact());
        ConsumerStatus.StreamStatus.Pending pending = ss.pending();
        y.put("pending", pending.count());
        y.put("oldest_pending", pending.oldestId());
        y.put("oldest_pending_age_ms", pending.oldestAge() == null ? null : pending.oldestAge().toMillis());
        y.put("consumers", pending.consumers());
        y.put("delivery_histogram", pending.deliveryHistogram());
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
    putCounters(x, lists.countersRecorded(), lists.deliveries(), lists.duplicatesSkipped(), lists.reclaimed());
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
      new TreeMap<>(ss.processing()).forEach((name, n) -> {
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

  /** The ledger consumers' counters of a group, {@code null} each if none were recorded. */
  private static void putCounters(Map<String, Object> x, boolean recorded, long deliveries, long duplicatesSkipped,
      long reclaimed) {
    x.put("deliveries", recorded ? deliveries : null);
    x.put("duplicates_skipped", recorded ? duplicatesSkipped : null);
    x.put("reclaimed", recorded ? reclaimed : null);
  }
}
