package dev.handoff.benchmarks.ledger;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryType;

/** What the benchmark's and the soak's samples read of this JVM's heap. */
final class Heap {

  private Heap() {}

  /** Heap in use right after the most recent garbage collection: the live set, as near as the JVM tells. */
  static long afterLastGc() {
    long bestEnd = -1;
    long used = 0;
    for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof com.sun.management.GarbageCollectorMXBean g && g.getLastGcInfo() != null) {
        var info = g.getLastGcInfo();
        if (info.getEndTime() > bestEnd) {
          bestEnd = info.getEndTime();
          long sum = 0;
          for (var pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP && info.getMemoryUsageAfterGc().containsKey(pool.getName())) {
              sum += info.getMemoryUsageAfterGc().get(pool.getName()).getUsed();
            }
          }
          used = sum;
        }
      }
    }
    return used;
  }

  /** Heap in use now, garbage included. */
  static long used() {
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
