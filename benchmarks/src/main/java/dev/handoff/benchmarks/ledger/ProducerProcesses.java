package dev.handoff.benchmarks.ledger;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The producers of a multi-process shape: {@link Shape#processes()} JVMs running {@link ProducerProcess}, on this
 * JVM's class path, each reporting its commits back as they happen, so that the run's timings and counts are the
 * same as with producers in this JVM (on Linux {@link System#nanoTime()} is one clock for every process). They
 * share nothing but the database: each has its own pool and its own {@code Outbox}, as service instances do.
 */
final class ProducerProcesses implements ProducerRun {

  /** How long the JVMs may take to start and fill their pools. */
  static final long START_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(120);
  /** From the last one's {@code ready} to the start: time to hand each its {@code go}. */
  static final long GO_MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final List<Process> processes = new ArrayList<>();
  private final List<Thread> readers = new ArrayList<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final CountDownLatch ready;
  private final long from;

  /**
   * Starts the processes and returns once every one is ready and told to write from {@link #from()} for
   * {@code durationNanos}; they start together whatever their start-up took.
   */
  ProducerProcesses(Shape shape, String jdbcUrl, ProducerProcess.Mode mode, String schema, int shards,
      String idPrefix, double rate, long durationNanos, CpuPinning.Split pinned, PacedProducers.Committed committed) {
    this.ready = new CountDownLatch(shape.processes());
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    for (int k = 0; k < shape.processes(); k++) {
      List<String> jvm = List.of(java, "-Xmx256m", "-XX:+UseSerialGC");
      List<String> main = List.of("-cp",
          System.getProperty("java.class.path"), ProducerProcess.class.getName(), mode.name(), jdbcUrl, schema,
          Integer.toString(shards), Integer.toString(shape.sessions()), Integer.toString(shape.perTransaction()),
          Double.toString(rate / shape.processes()), Integer.toString(k), Integer.toString(shape.processes()),
          idPrefix);
      List<String> command = new ArrayList<>();
      if (pinned == null) {
        command.addAll(jvm);
        command.addAll(main);
      } else {
        command.addAll(pinned.onProducerCpus(jvm, main));
      }
      try {
        Path errors = Files.createTempFile("bench-producer-" + k + "-", ".err");
        errors.toFile().deleteOnExit();
        Process p = new ProcessBuilder(command).redirectError(errors.toFile()).start();
        processes.add(p);
        Thread reader = new Thread(() -> read(p, errors, committed), "bench-producer-reader-" + k);
        reader.setDaemon(true);
        reader.start();
        readers.add(reader);
      } catch (IOException e) {
        failure.compareAndSet(null, e);
      }
    }
    this.from = go(durationNanos);
  }

  /** Waits for every process's {@code ready}, then tells each when to start and stop; returns the start. */
  private long go(long durationNanos) {
    try {
      if (failure.get() != null || !ready.await(START_TIMEOUT_NANOS, TimeUnit.NANOSECONDS)) {
        failure.compareAndSet(null, new IllegalStateException("producer processes not ready within "
            + TimeUnit.NANOSECONDS.toSeconds(START_TIMEOUT_NANOS) + " s"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure.compareAndSet(null, e);
    }
    long start = System.nanoTime() + GO_MARGIN_NANOS;
    String go = "go " + start + " " + (start + durationNanos) + "\n";
    for (Process p : processes) {
      try {
        p.getOutputStream().write(go.getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().flush();
      } catch (IOException e) {
        failure.compareAndSet(null, e);
      }
      if (failure.get() != null) {
        p.destroyForcibly();
      }
    }
    return start;
  }

  @Override
  public long from() {
    return from;
  }

  private void read(Process p, Path errors, PacedProducers.Committed committed) {
    boolean ended = false;
    try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.equals("ready")) {
          ready.countDown();
        } else if (line.startsWith("c ")) {
          String[] f = line.split(" ");
          committed.committed(Long.parseLong(f[1]), Integer.parseInt(f[2]), Long.parseLong(f[3]));
        } else if (line.startsWith("end ")) {
          ended = true;
        }
      }
      ready.countDown(); // a process that ended before it was ready must not hold the others up
      int exit = p.waitFor();
      if (exit != 0 || !ended) {
        String err = Files.readString(errors);
        failure.compareAndSet(null, new IllegalStateException("producer process exited with " + exit + ": "
            + err.lines().limit(5).reduce("", (a, b) -> a + b + " | ")));
      }
    } catch (IOException | RuntimeException e) {
      failure.compareAndSet(null, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure.compareAndSet(null, e);
    }
  }

  @Override
  public void join() {
    BenchThreads.joinAll(readers);
  }

  @Override
  public Throwable failure() {
    return failure.get();
  }
}
