package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.PollResult;
import dev.handoff.consumer.internal.Settled.Failure;
import dev.handoff.core.ListFormat;
import dev.handoff.core.MalformedEntryException;
import dev.handoff.core.StreamFormat;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.exceptions.JedisException;

/**
 * One list-consumer worker: a name, a processing list per shard, and its failed elements waiting for their retry.
 *
 * <p>A step: after a (re)start, what its processing lists still hold; then its failed elements whose backoff is
 * over; then new elements up to the batch size ({@code LMOVE} in a script, or one {@code BLMOVE} when nothing else
 * was found); settle; {@code LREM} what committed; count a delivery for what failed and hold it for a retry. Failed
 * elements stay in the worker's processing list (covered by its heartbeat) and count against its batch size, so
 * in-flight work stays bounded.
 *
 * <p>Not thread-safe, except {@link #thread} and {@link #processing}, which the heartbeat reads.
 */
final class ListWorker extends DeliveryWorker {

  /** An element this worker holds in its processing list, waiting for a retry. */
  private record Held(String list, byte[] element, long deliveries, long dueAtMillis) {}

  private final ListQueues redis;
  private final List<String> listKeys;
  /** This worker's processing list of each shard's list. */
  final Map<String, String> processing = new HashMap<>();
  volatile Thread thread;
  boolean reportedDead;
  private final List<Held> held = new ArrayList<>();
  private final Map<Delivery, byte[]> raw = new IdentityHashMap<>();
  private boolean ownReplayed;
  private int rotation;

  ListWorker(Shared shared, int index, ListQueues redis, List<String> listKeys) {
    super(shared, index);
    this.redis = redis;
    this.listKeys = listKeys;
    for (String list : listKeys) {
      processing.put(list, ListFormat.processingKey(list, name));
    }
  }

  @Override
  public void redisFailed(JedisException e) {
    super.redisFailed(e);
    forgetHeld();
  }

  @Override
  void replaced() {
    super.replaced();
    forgetHeld();
  }

  @Override
  void started(Thread t) {
    thread = t;
    reportedDead = false;
  }

  @Override
  public boolean failed(Throwable e) {
    shared.log().error("List consumer {}: unexpected failure; retrying", name, e);
    forgetHeld();
    return true;
  }

  /**
   * After a failure mid-step nothing is known about what the processing lists hold (taken but not acknowledged,
   * say): read them again, as after a restart, rather than leave elements there that no one would ever handle.
   */
  private void forgetHeld() {
    held.clear();
    ownReplayed = false;
  }

  @Override
  PollResult step(boolean blocking) {
    shared.collaborators().faults().at(ConsumerFaults.Point.BEFORE_READ);
    raw.clear(); // what a step that failed before settling had taken
    List<Delivery> batch = new ArrayList<>();
    if (!ownReplayed) {
      replayOwn(batch);
    }
    long now = clock.millis();
    long nextDue = Long.MAX_VALUE;
    for (Iterator<Held> it = held.iterator(); it.hasNext(); ) {
      Held h = it.next();
      if (h.dueAtMillis() <= now && batch.size() < config.reading().batchSize()) {
        it.remove();
        add(batch, h.list(), h.element(), h.deliveries());
      } else {
        nextDue = Math.min(nextDue, h.dueAtMillis());
      }
    }
    int free = config.reading().batchSize() - held.size() - batch.size();
    for (int j = 0; j < listKeys.size() && free > 0; j++) {
      String list = listKeys.get((rotation + j) % listKeys.size());
      for (ListQueues.Taken t : redis.take(list, processing.get(list), free)) {
        add(batch, list, t.element(), t.previousDeliveries() + 1);
        free--;
      }
    }
    if (batch.isEmpty() && free > 0 && blocking && shared.running().getAsBoolean()) {
      String list = listKeys.get(rotation % listKeys.size());
      rotation = (rotation + 1) % listKeys.size();
      long wait = Math.min(config.reading().block().toMillis() / listKeys.size(), nextDue - now);
      ListQueues.Taken t = redis.blockingTake(list, processing.get(list), Duration.ofMillis(Math.max(10, wait)));
      if (t != null) {
        add(batch, list, t.element(), t.previousDeliveries() + 1);
        for (ListQueues.Taken more : redis.take(list, processing.get(list), free - 1)) {
          add(batch, list, more.element(), more.previousDeliveries() + 1);
        }
      }
    }
    return settle(batch, 0);
  }

  /** A restart under the same name: the previous life's unfinished elements, each counted as a delivery. */
  private void replayOwn(List<Delivery> batch) {
    for (String list : listKeys) {
      List<byte[]> elements = redis.held(processing.get(list));
      if (elements.isEmpty()) {
        continue;
      }
      long[] counts = redis.countFailed(list, processing.get(list), elements, messageIds(elements));
      for (int i = 0; i < elements.size(); i++) {
        if (counts[i] >= 0) {
          add(batch, list, elements.get(i), counts[i] + 1);
        }
      }
    }
    ownReplayed = true;
  }

  private void add(List<Delivery> batch, String list, byte[] element, long deliveries) {
    int shard = listKeys.indexOf(list);
    Delivery d;
    try {
      ListFormat.Element e = ListFormat.decode(element);
      d = Delivery.of(list, shard, e.id(), deliveries, e.fields());
    } catch (MalformedEntryException e) {
      // Still dead-lettered under an ID of its own: the header's, or a digest of the element.
      String[] header = ListFormat.header(element);
      String id = header != null ? header[0] : "x-" + sha1(element);
      Map<byte[], byte[]> fields = header == null ? Map.of()
          : Map.of(StreamFormat.MESSAGE_ID.getBytes(StandardCharsets.UTF_8),
              header[1].getBytes(StandardCharsets.UTF_8));
      d = Delivery.of(list, shard, id, deliveries, fields);
    }
    batch.add(d);
    raw.put(d, element);
  }

  @Override
  protected void afterSettle() {
    raw.clear();
  }

  /** LREM count 1 per element committed. */
  @Override
  protected void acknowledge(Map<String, List<Delivery>> byKey) {
    byKey.forEach((list, ds) -> {
      List<byte[]> elements = elementsOf(ds);
      redis.ack(list, processing.get(list), elements, messageIds(elements));
    });
  }

  /**
   * Counts a delivery for each failure and holds the element (still in this worker's processing list) for its
   * retry. A database failure decided nothing: those elements are held too, for a retry that counts no delivery.
   */
  @Override
  protected void holdForRetry(List<Failure> failed, Map<Delivery, Duration> backoffs, List<Delivery> abandoned) {
    long now = clock.millis();
    Map<String, List<Delivery>> failedByList = new LinkedHashMap<>();
    failed.forEach(f -> failedByList.computeIfAbsent(f.delivery().streamKey, k -> new ArrayList<>())
        .add(f.delivery()));
    failedByList.forEach((list, ds) -> {
      List<byte[]> elements = elementsOf(ds);
      long[] counts = redis.countFailed(list, processing.get(list), elements, messageIds(elements));
      for (int i = 0; i < ds.size(); i++) {
        Delivery d = ds.get(i);
        if (counts[i] >= 0) {
          held.add(new Held(list, elements.get(i), Math.max(counts[i], d.deliveries) + 1,
              now + backoffs.get(d).toMillis()));
        }
      }
    });
    for (Delivery d : abandoned) {
      long due = now + config.retries().initialBackoff().toMillis();
      held.add(new Held(d.streamKey, raw.get(d), d.deliveries, due));
    }
  }

  private List<byte[]> elementsOf(List<Delivery> deliveries) {
    List<byte[]> elements = new ArrayList<>(deliveries.size());
    deliveries.forEach(d -> elements.add(raw.get(d)));
    return elements;
  }

  private static List<String> messageIds(List<byte[]> elements) {
    List<String> out = new ArrayList<>(elements.size());
    for (byte[] e : elements) {
      String[] header = ListFormat.header(e);
      out.add(header == null ? null : header[1]);
    }
    return out;
  }

  private static String sha1(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
