package dev.handoff.ledger.demo;

import dev.handoff.core.ListFormat;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.tools.Sql;
import dev.handoff.testing.tools.TimedLog;
import redis.clients.jedis.UnifiedJedis;

/** The demo's progress line: payments paid, published and charged, what the consumers skipped, reclaimed, gave up. */
record DemoProgress(UnifiedJedis redis, Demo.Config config, Sql sql, DemoCast cast, DemoProducer producer,
    TimedLog log) {

  /** One line; with {@code naive} its charges, without (on lists) what the lists hold. */
  void print(NaiveConsumer naive) {
    long published = sql.queryLong("SELECT count(*) FROM " + config.schema()
        + ".outbox WHERE published_at IS NOT NULL");
    long charges = sql.queryLong("SELECT count(*) FROM " + config.schema() + ".charge WHERE ledger = ?",
        LedgerConsumer.DEFAULT_GROUP);
    DemoCast.Totals totals = cast.totals();
    if (naive == null) {
      long waiting = 0;
      long processing = 0;
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        String list = ListFormat.listKey(config.keyPrefix(), PaymentEvents.TOPIC, shard);
        waiting += redis.llen(list);
        for (String p : redis.hkeys(ListFormat.consumersKey(list))) {
          processing += redis.llen(p);
        }
      }
      log.event("paid %,d/%,d  published %,d  (lists: waiting %,d, in processing %,d)  charged %,d  duplicates"
          + " skipped %,d  reclaimed %,d  dead letters %d", producer.paid(), config.payments(), published, waiting,
          processing, charges, totals.duplicates(), totals.reclaimed(), totals.deadLettered());
      return;
    }
    log.event("paid %,d/%,d  published %,d  charged %,d  duplicates skipped %,d  reclaimed %,d  dead letters %d"
        + "  | naive charges %,d", producer.paid(), config.payments(), published, charges, totals.duplicates(),
        totals.reclaimed(), totals.deadLettered(), naive.charged());
  }
}
