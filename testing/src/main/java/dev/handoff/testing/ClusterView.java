package dev.handoff.testing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import redis.clients.jedis.HostAndPort;

/** One node's {@code CLUSTER NODES} reply, parsed: who is master or replica of whom, and which slots each owns. */
record ClusterView(List<Entry> entries) {

  /** One line: {@code <id> <ip:port@bus> <flags> <master id or -> ... <slots...>}. */
  record Entry(String id, HostAndPort address, Set<String> flags, String masterId, List<int[]> slots) {

    boolean master() {
      return flags.contains("master");
    }

    boolean replica() {
      return flags.contains("slave");
    }

    /** Marked failed (FAIL, or PFAIL by the node that answered), or still in a handshake. */
    boolean unhealthy() {
      return flags.contains("fail") || flags.contains("fail?") || flags.contains("handshake")
          || flags.contains("noaddr");
    }

    int slotCount() {
      return slots.stream().mapToInt(r -> r[1] - r[0] + 1).sum();
    }

    int firstSlot() {
      return slots.stream().mapToInt(r -> r[0]).min().orElse(Integer.MAX_VALUE);
    }

    boolean owns(int slot) {
      return slots.stream().anyMatch(r -> r[0] <= slot && slot <= r[1]);
    }
  }

  static ClusterView parse(String clusterNodes) {
    List<Entry> entries = new ArrayList<>();
    for (String line : clusterNodes.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.trim().split(" ");
      String address = f[1].split("@")[0];
      int colon = address.lastIndexOf(':');
      HostAndPort hostAndPort = new HostAndPort(address.substring(0, colon),
          Integer.parseInt(address.substring(colon + 1)));
      List<int[]> slots = new ArrayList<>();
      for (int i = 8; i < f.length; i++) {
        if (f[i].startsWith("[")) {
          continue; // an importing/migrating mark, not ownership
        }
        int dash = f[i].indexOf('-');
        int from = Integer.parseInt(dash < 0 ? f[i] : f[i].substring(0, dash));
        int to = dash < 0 ? from : Integer.parseInt(f[i].substring(dash + 1));
        slots.add(new int[] {from, to});
      }
      entries.add(new Entry(f[0], hostAndPort, Set.of(f[2].split(",")), f[3], List.copyOf(slots)));
    }
    return new ClusterView(List.copyOf(entries));
  }

  Optional<Entry> byId(String id) {
    return entries.stream().filter(e -> e.id().equals(id)).findFirst();
  }

  Optional<Entry> owner(int slot) {
    return entries.stream().filter(e -> e.master() && !e.unhealthy() && e.owns(slot)).findFirst();
  }

  /** The healthy replicas of {@code masterId}. */
  List<Entry> replicasOf(String masterId) {
    return entries.stream().filter(e -> e.replica() && !e.unhealthy() && e.masterId().equals(masterId)).toList();
  }

  /** The healthy masters that own slots, in slot order. */
  List<Entry> mastersWithSlots() {
    return entries.stream()
        .filter(e -> e.master() && !e.unhealthy() && !e.slots().isEmpty())
        .sorted(Comparator.comparingInt(Entry::firstSlot))
        .toList();
  }
}
