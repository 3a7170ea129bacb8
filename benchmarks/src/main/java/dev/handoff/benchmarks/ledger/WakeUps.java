package dev.handoff.benchmarks.ledger;

import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.ledger.PaymentService;
import dev.handoff.testing.tools.LedgerServers;
import dev.handoff.testing.tools.TimedLog;
import dev.handoff.relay.Relay;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XReadParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * How soon a relay that has been idle publishes the next row: {@code n} times, after {@value #IDLE_SECONDS} s with
 * nothing to do, one payment through the payment service, timed from its commit to the moment a blocking
 * {@code XREAD} (issued from the streams' tops read before the payment) returns its entry. The relay has fallen asleep
 * by then, so this is the path of an append's notification.
 */
record WakeUps(LedgerServers servers, Bench.Config config, TimedLog log) {

  static final int IDLE_SECONDS = 5;

  /** Commit-to-stream latencies in milliseconds, sorted. */
  double[] measure(String schema, String prefix, int n) {
    PaymentService service = new PaymentService(servers.dataSource(), schema, config.topic());
    String[] keys = new String[config.shards()];
    for (int s = 0; s < keys.length; s++) {
      keys[s] = StreamFormat.streamKey(prefix, PaymentEvents.TOPIC, s);
    }
    double[] millis = new double[n];
    try (Relay relay = config.relay(servers.dataSource(), servers, schema, prefix, "bench-wake-relay")) {
      relay.start();
      for (int i = 0; i < n; i++) {
        BenchThreads.pause(IDLE_SECONDS * 1000L);
        Map<String, StreamEntryID> tops = new LinkedHashMap<>();
        for (String key : keys) {
          List<StreamEntry> last = servers.redis().xrevrange(key, "+", "-", 1);
          tops.put(key, last.isEmpty() ? new StreamEntryID(0, 0) : last.get(0).getID());
        }
        service.payAll(BenchPayments.batch("wake-", i, 1));
        long committed = System.nanoTime();
        var read = servers.redis().xread(XReadParams.xReadParams().count(1).block(10_000), tops);
        long seen = System.nanoTime();
        if (read == null || read.isEmpty()) {
          throw new LedgerException("the payment of wake-up " + (i + 1) + " did not reach a stream within 10 s");
        }
        millis[i] = (seen - committed) / 1e6;
      }
      relay.close(Duration.ofSeconds(5));
    }
    Arrays.sort(millis);
    log.event("first row after %d s idle (%d times): commit to stream p50 %.1f ms, p99 %.1f ms, max %.1f ms",
        IDLE_SECONDS, n, pct(millis, 0.50), pct(millis, 0.99), millis[n - 1]);
    return millis;
  }

  /** The nearest-rank percentile of {@code sorted}, as the runs' latencies are taken. */
  static double pct(double[] sorted, double p) {
    return sorted.length == 0 ? Double.NaN : sorted[Math.min(sorted.length - 1, (int) (p * sorted.length))];
  }
}
