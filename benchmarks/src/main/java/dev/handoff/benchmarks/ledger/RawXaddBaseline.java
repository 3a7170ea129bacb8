package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.core.StreamMessage;
import dev.handoff.ledger.Payment;
import dev.handoff.ledger.PaymentEvents;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.XAddParams;

/** The ceiling of the relay's Redis side: entries shaped like the relay's, XADD in pipelines of 1,000. */
record RawXaddBaseline(UnifiedJedis redis, int shards) {

  /** Adds {@code n} entries to the streams under {@code prefix}, spread over the shards. */
  void xadd(String prefix, int n) {
    byte[][] keys = new byte[shards][];
    for (int s = 0; s < keys.length; s++) {
      keys[s] = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, s).getBytes(StandardCharsets.UTF_8);
    }
    Instant now = Instant.now();
    for (int done = 0; done < n; ) {
      int count = Math.min(1000, n - done);
      try (Pipeline p = RedisPipelines.open(redis)) {
        for (int i = 0; i < count; i++) {
          Payment pay = BenchPayments.batch("x-", done + i, 1).get(0);
          StreamMessage m = new StreamMessage(UUID.randomUUID(), done + i, PaymentEvents.TOPIC,
              PaymentEvents.CREATED, pay.paymentId(), Map.of("content-type", "application/json"), now,
              BenchPayments.payload(pay));
          p.xadd(keys[(done + i) % keys.length], XAddParams.xAddParams(), StreamFormat.encode(m));
        }
        p.sync();
      }
      done += count;
    }
  }
}
