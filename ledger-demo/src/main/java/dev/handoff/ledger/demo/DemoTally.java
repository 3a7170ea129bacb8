package dev.handoff.ledger.demo;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerAudit;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.Sql;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The demo's counts, from the database and Redis rather than from what the demo believes it did: that it starts
 * from nothing, what is still unpublished, and at the end every number of the {@link Demo.Report} with the audit.
 */
record DemoTally(LedgerServers servers, Demo.Config config) {

  /** The demo's queries, on a connection of their own each. */
  Sql sql() {
    return new Sql(servers.dataSource(), "demo");
  }

  /** Whether Redis holds any of the list transport's keys for the payments topic under the demo's key prefix. */
  private boolean listKeysExist() {
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (servers.redis().exists(list) || servers.redis().exists(ListFormat.relayKey(list))
          || servers.redis().exists(ListFormat.consumersKey(list))) {
        return true;
      }
    }
    return false;
  }

  /** Refuses a schema that holds payments and a key prefix whose lists or streams exist. */
  void requireFresh() {
    long payments = sql().queryLong("SELECT count(*) FROM " + config.schema() + ".payment");
    if (payments > 0) {
      throw new LedgerException("schema '" + config.schema() + "' already holds " + payments
          + " payments; the demo needs a fresh one (pass another --schema)");
    }
    if (listKeysExist()) {
      throw new LedgerException("Redis already holds the payments lists under prefix '" + config.keyPrefix()
          + "'; the demo needs fresh keys (pass another --key-prefix)");
    }
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      if (servers.redis().exists(key)) {
        throw new LedgerException("Redis already holds stream '" + key + "'; the demo needs fresh keys (pass"
            + " another --key-prefix)");
      }
    }
  }

  long unpublished() {
    return sql().queryLong("SELECT count(*) FROM " + config.schema() + ".outbox WHERE published_at IS NULL");
  }

  /**
   * The report.
   *
   * @param totals the ledger consumers' counters
   * @param relayResent rows relay-2 sent again after relay-1 died
   */
  Demo.Report report(Duration firstDrain, Duration elapsed, long replayed, boolean completed, DemoCast.Totals totals,
      long relayResent) {
    String s = config.schema();
    long payments = sql().queryLong("SELECT count(*) FROM " + s + ".payment");
    long poison = sql().queryLong("SELECT count(*) FROM " + s + ".payment WHERE poison");
    long charges = sql().queryLong("SELECT count(*) FROM " + s + ".charge WHERE ledger = ?",
        LedgerConsumer.DEFAULT_GROUP);
    long deadLetters = sql().queryLong("SELECT count(*) FROM " + s + ".dead_letter WHERE consumer_group = ? AND status"
        + " = 'dead'", LedgerConsumer.DEFAULT_GROUP);
    long naiveCharges = sql().queryLong("SELECT count(*) FROM " + s + ".charge WHERE ledger = ?",
        NaiveConsumer.DEFAULT_GROUP);
    long naiveDistinct = sql().queryLong("SELECT count(DISTINCT payment_id) FROM " + s + ".charge WHERE ledger = ?",
        NaiveConsumer.DEFAULT_GROUP);
    long naiveDouble = sql().queryLong("SELECT count(*) FROM (SELECT payment_id FROM " + s + ".charge WHERE ledger = ?"
        + " GROUP BY payment_id HAVING count(*) > 1) d", NaiveConsumer.DEFAULT_GROUP);
    long naiveFromReplay = completed ? Math.min(naiveCharges - naiveDistinct, payments - poison) : 0;
    long[] stream = config.lists() ? listCounts() : streamCounts();
    LedgerAudit.Result audit = LedgerAudit.audit(servers.dataSource(), s, LedgerConsumer.DEFAULT_GROUP);
    return new Demo.Report(payments, poison, charges, totals.handled(), Math.max(0, charges - totals.handled()),
        totals.duplicates(), totals.failed(), totals.deadLettered(), totals.reclaimed(), deadLetters, replayed,
        stream[0], stream[1], relayResent, firstDrain, elapsed, naiveCharges, naiveDouble,
        naiveCharges - naiveDistinct, naiveCharges - naiveDistinct - naiveFromReplay, audit, completed,
        config.transport(), config.listCapacity());
  }

  /** Elements the relays pushed (the relay hashes' counts) and the outbox rows of the topic. */
  private long[] listCounts() {
    long pushed = 0;
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String list = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      String added = servers.redis().hget(ListFormat.relayKey(list), "added");
      pushed += added == null ? 0 : Long.parseLong(added);
    }
    return new long[] {pushed, sql().queryLong("SELECT count(*) FROM " + config.schema() + ".outbox WHERE topic = ?",
        PaymentEvents.TOPIC)};
  }

  /** Entries in the streams and the distinct message IDs among them. */
  private long[] streamCounts() {
    long entries = 0;
    Set<String> messages = new HashSet<>();
    for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
      String key = StreamFormat.streamKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
      String after = "-";
      while (true) {
        List<StreamEntry> page = servers.redis().xrange(key, after, "+", 1000);
        if (page.isEmpty()) {
          break;
        }
        for (StreamEntry e : page) {
          entries++;
          messages.add(e.getFields().get(StreamFormat.MESSAGE_ID));
        }
        after = "(" + page.get(page.size() - 1).getID();
      }
    }
    return new long[] {entries, messages.size()};
  }
}
