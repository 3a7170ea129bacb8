package dev.handoff.benchmarks.ledger;

import java.util.HashMap;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;

/**
 * Redis's calls per command ({@code INFO commandstats}), server-wide, for the difference over a run. Commands a Lua
 * script calls are counted under their own names as well as the script's {@code EVALSHA}; a subcommand is named
 * with its container ({@code xgroup|create}).
 */
record RedisCommandStats(Map<String, Long> calls) {

  RedisCommandStats {
    calls = Map.copyOf(calls);
  }

  /** The calls so far. On a cluster this reads one node only; the benchmark runs on a single server. */
  static RedisCommandStats read(UnifiedJedis redis) {
    Map<String, Long> calls = new HashMap<>();
    for (String line : redis.info("commandstats").split("\r?\n")) {
      // cmdstat_xreadgroup:calls=12,usec=345,usec_per_call=28.75,rejected_calls=0,failed_calls=0
      if (!line.startsWith("cmdstat_")) {
        continue;
      }
      int colon = line.indexOf(':');
      int at = line.indexOf("calls=", colon);
      int end = line.indexOf(',', at);
      if (colon < 0 || at < 0) {
        continue;
      }
      calls.put(line.substring("cmdstat_".length(), colon),
          Long.parseLong(line.substring(at + "calls=".length(), end < 0 ? line.length() : end)));
    }
    return new RedisCommandStats(calls);
  }

  /** The calls made since {@code before}, commands with none left out. */
  RedisCommandStats since(RedisCommandStats before) {
    Map<String, Long> delta = new HashMap<>();
    calls.forEach((command, n) -> {
      long d = n - before.calls.getOrDefault(command, 0L);
      if (d > 0) {
        delta.put(command, d);
      }
    });
    return new RedisCommandStats(delta);
  }

  long of(String command) {
    return calls.getOrDefault(command, 0L);
  }
}
