package dev.handoff.cli;

import dev.handoff.core.Health;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The relay process's health, written to a file for a container's exec probe: the status on the first line, then
 * one line per reason ({@code code: message}). Replaced whole with an atomic move, so a probe never reads half a
 * file. Not thread-safe: one thread writes.
 */
final class HealthFile {

  private final Path file;
  private final Path temp;

  HealthFile(Path file) {
    this.file = file.toAbsolutePath();
    this.temp = this.file.resolveSibling(this.file.getFileName() + ".tmp");
  }

  /** Replaces the file with {@code health}. */
  void write(Health health) {
    StringBuilder text = new StringBuilder(health.status().name()).append('\n');
    for (Health.Reason r : health.reasons()) {
      text.append(r.code()).append(": ").append(r.message()).append('\n');
    }
    try {
      Files.writeString(temp, text, StandardCharsets.UTF_8);
      Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("could not write the health file " + file + " (--health-file)", e);
    }
  }
}
