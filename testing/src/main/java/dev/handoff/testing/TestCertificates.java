package dev.handoff.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * A certificate authority of a test's own and two certificates it signed (a server's and a client's), made with the
 * JDK's {@code keytool} and written as PEM files: certificates as {@code CERTIFICATE} blocks, keys as unencrypted
 * PKCS#8 {@code PRIVATE KEY} blocks (EC P-256), the form Redis and handoff read. Valid for three days.
 */
public final class TestCertificates {

  private static final String STORE_PASSWORD = "changeit";

  private final Path dir;

  private TestCertificates(Path dir) {
    this.dir = dir;
  }

  /**
   * Generates a CA, a server certificate whose subject alternative names are {@code serverNames} in keytool's form
   * ({@code ip:127.0.0.1,dns:localhost}), and a client certificate, in {@code dir}.
   */
  public static TestCertificates generate(Path dir, String serverNames) {
    TestCertificates c = authority(dir);
    // Each keytool run is a JVM start (a second or more on a busy machine): the two chains are made side by side.
    CompletableFuture<Void> server = CompletableFuture.runAsync(() -> c.signed("server", serverNames, "serverAuth"));
    CompletableFuture<Void> client = CompletableFuture.runAsync(() -> c.signed("client", null, "clientAuth"));
    try {
      CompletableFuture.allOf(server, client).join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
    return c;
  }

  /** Generates a CA alone in {@code dir}: its {@link #caCertificate()} is there, the other files are not. */
  public static TestCertificates authority(Path dir) {
    try {
      Files.createDirectories(dir);
      TestCertificates c = new TestCertificates(dir.toAbsolutePath());
      c.keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "3",
          "-dname", "CN=handoff test CA", "-ext", "bc:c", "-keystore", "ca.p12");
      c.writePem("ca.pem", List.of(c.store("ca.p12").getCertificate("ca")), null);
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The CA's certificate (PEM). */
  public Path caCertificate() {
    return dir.resolve("ca.pem");
  }

  /** The server's certificate (PEM). */
  public Path serverCertificate() {
    return dir.resolve("server.pem");
  }

  /** The server's private key (PEM, PKCS#8). */
  public Path serverKey() {
    return dir.resolve("server.key");
  }

  /** The client's certificate (PEM). */
  public Path clientCertificate() {
    return dir.resolve("client.pem");
  }

  /** The client's private key (PEM, PKCS#8). */
  public Path clientKey() {
    return dir.resolve("client.key");
  }

  /** A socket factory that trusts this CA and presents the client certificate, for a test's own admin client. */
  public SSLSocketFactory clientSocketFactory() {
    try {
      KeyStore trust = emptyStore();
      trust.setCertificateEntry("ca", store("ca.p12").getCertificate("ca"));
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      KeyStore keys = emptyStore();
      Certificate signed;
      try (InputStream in = Files.newInputStream(clientCertificate())) {
        signed = CertificateFactory.getInstance("X.509").generateCertificate(in);
      }
      keys.setKeyEntry("client", store("client.p12").getKey("client", STORE_PASSWORD.toCharArray()),
          STORE_PASSWORD.toCharArray(), new Certificate[] {signed});
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, STORE_PASSWORD.toCharArray());
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
      return context.getSocketFactory();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Makes {@code <name>.pem} (signed by the CA) and {@code <name>.key}. */
  private void signed(String name, String names, String usage) {
    try {
      keytool("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "3",
          "-dname", "CN=handoff test " + name, "-keystore", name + ".p12");
      keytool("-certreq", "-alias", name, "-keystore", name + ".p12", "-file", name + ".csr");
      List<String> gencert = new ArrayList<>(List.of("-gencert", "-alias", "ca", "-keystore", "ca.p12",
          "-infile", name + ".csr", "-outfile", name + ".pem", "-rfc", "-validity", "3", "-ext", "eku=" + usage));
      if (names != null) {
        gencert.addAll(List.of("-ext", "san=" + names));
      }
      keytool(gencert.toArray(String[]::new));
      writePem(name + ".key", List.of(), store(name + ".p12").getKey(name, STORE_PASSWORD.toCharArray()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private void keytool(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")); // a short run: start fast
    command.addAll(List.of(args));
    command.addAll(List.of("-storetype", "PKCS12", "-storepass", STORE_PASSWORD, "-noprompt"));
    Path log = Files.createTempFile(dir, "keytool", ".log");
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException("keytool " + String.join(" ", args) + " failed: " + Files.readString(log));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running keytool", e);
    }
  }

  private KeyStore store(String file) throws IOException, GeneralSecurityException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(dir.resolve(file))) {
      store.load(in, STORE_PASSWORD.toCharArray());
    }
    return store;
  }

  private void writePem(String file, List<Certificate> certificates, Key key) throws IOException,
      GeneralSecurityException {
    Base64.Encoder base64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII));
    StringBuilder pem = new StringBuilder();
    for (Certificate c : certificates) {
      pem.append("-----BEGIN CERTIFICATE-----\n").append(base64.encodeToString(c.getEncoded()))
          .append("\n-----END CERTIFICATE-----\n");
    }
    if (key != null) {
      // getEncoded() of a private key is its PKCS#8 form.
      pem.append("-----BEGIN PRIVATE KEY-----\n").append(base64.encodeToString(key.getEncoded()))
          .append("\n-----END PRIVATE KEY-----\n");
    }
    Files.writeString(dir.resolve(file), pem.toString(), StandardCharsets.US_ASCII);
  }

  private static KeyStore emptyStore() throws IOException, GeneralSecurityException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    return store;
  }
}
