package dev.handoff.consumer.internal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The reclaim pass a stream consumer's workers share: one worker at a time runs it, following each stream's
 * {@code XAUTOCLAIM} cursor across calls until {@code 0-0}; a new pass starts {@code intervalMillis} after the last
 * one ended (at once when forced, as {@code pollOnce} does). Thread-safe.
 */
final class ReclaimScan {
  private final List<String> keys;
  private final long intervalMillis;
  private final Map<String, String> cursors = new HashMap<>();
  private final Set<String> done = new HashSet<>();
  private boolean busy;
  private boolean inPass;
  private long nextPassAt;

  ReclaimScan(List<String> keys, long intervalMillis) {
    this.keys = keys;
    this.intervalMillis = intervalMillis;
  }

  synchronized boolean tryBegin(long now, boolean force) {
    if (busy || (!inPass && !force && now < nextPassAt)) {
      return false;
    }
    busy = true;
    inPass = true;
    return true;
  }

  synchronized List<String> remaining() {
    List<String> out = new ArrayList<>();
    for (String k : keys) {
      if (!done.contains(k)) {
        out.add(k);
      }
    }
    return out;
  }

  synchronized String cursor(String key) {
    return cursors.getOrDefault(key, "0-0");
  }

  synchronized void advance(String key, String next) {
    if ("0-0".equals(next)) {
      done.add(key);
      cursors.remove(key);
    } else {
      cursors.put(key, next);
    }
  }

  synchronized void end(long now) {
    busy = false;
    if (done.containsAll(keys)) {
      inPass = false;
      done.clear();
      nextPassAt = now + intervalMillis;
    }
  }

  synchronized void reset() {
    cursors.clear();
    done.clear();
    inPass = false;
    nextPassAt = 0;
  }
}
