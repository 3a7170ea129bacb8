package dev.handoff.core.internal;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * Reads PEM certificates and PKCS#8 keys with the JDK alone and makes the TLS context of a Redis connection from
 * them. Every error is an {@link IllegalArgumentException} that names the file and what is wrong with it.
 */
public final class PemFiles {

  private static final Pattern BLOCK =
      Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]*)-----END \\1-----");
  private static final char[] NO_PASSWORD = new char[0];

  private PemFiles() {}

  /**
   * A TLS context that trusts the CAs of {@code caFile} (the JVM's truststore if null) and presents the
   * certificate of {@code certificateFile} with the key of {@code keyFile} (none if both are null).
   */
  public static SSLContext sslContext(Path caFile, Path certificateFile, Path keyFile) {
    try {
      TrustManager[] trust = null;
      if (caFile != null) {
        KeyStore store = emptyStore();
        List<X509Certificate> cas = certificates(caFile, "CA file");
        for (int i = 0; i < cas.size(); i++) {
          store.setCertificateEntry("ca-" + i, cas.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        trust = tmf.getTrustManagers();
      }
      KeyManager[] keys = null;
      if (certificateFile != null) {
        List<X509Certificate> chain = certificates(certificateFile, "client certificate file");
        PrivateKey key = privateKey(keyFile, chain.get(0), certificateFile);
        KeyStore store = emptyStore();
        store.setKeyEntry("client", key, NO_PASSWORD, chain.toArray(new Certificate[0]));
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, NO_PASSWORD);
        keys = kmf.getKeyManagers();
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys, trust, null);
      return context;
    } catch (GeneralSecurityException | IOException e) {
      // The files were read and parsed by now: what is left is the JDK's TLS set-up itself.
      throw new IllegalStateException("cannot set up TLS for Redis: " + e, e);
    }
  }

  /** The certificates of a PEM file, in file order; at least one. */
  static List<X509Certificate> certificates(Path file, String what) {
    List<byte[]> blocks = blocks(file, what, "CERTIFICATE");
    List<X509Certificate> result = new ArrayList<>();
    try {
      CertificateFactory factory = CertificateFactory.getInstance("X.509");
      for (byte[] der : blocks) {
        result.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(der)));
      }
    } catch (CertificateException e) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " holds a CERTIFICATE block that is not"
          + " an X.509 certificate: " + e.getMessage(), e);
    }
    return result;
  }

  /** The PKCS#8 key of {@code file}, checked to belong to {@code certificate}. */
  static PrivateKey privateKey(Path file, X509Certificate certificate, Path certificateFile) {
    String what = "client key file";
    byte[] der = blocks(file, what, "PRIVATE KEY").get(0);
    String algorithm = certificate.getPublicKey().getAlgorithm();
    PrivateKey key;
    try {
      key = KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (InvalidKeySpecException e) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " is not a PKCS#8 " + algorithm
          + " key (the certificate's algorithm): " + e.getMessage(), e);
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + ": this JVM cannot read " + algorithm
          + " keys", e);
    }
    if (!belongsTo(key, certificate)) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " is not the key of the certificate in "
          + certificateFile);
    }
    return key;
  }

  /**
   * The decoded blocks of type {@code type} in a PEM file. Other key formats are named in the error, with the
   * command that converts them, since they are what {@code openssl} writes by default in some versions.
   */
  private static List<byte[]> blocks(Path file, String what, String type) {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.ISO_8859_1);
    } catch (IOException e) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " cannot be read: " + e, e);
    }
    List<byte[]> result = new ArrayList<>();
    List<String> others = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      if (!m.group(1).equals(type)) {
        others.add(m.group(1));
        continue;
      }
      try {
        result.add(Base64.getMimeDecoder().decode(m.group(2)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("the Redis " + what + " " + file + " has a " + type
            + " block that is not Base64", e);
      }
    }
    if (!result.isEmpty()) {
      return result;
    }
    String legacy = others.contains("RSA PRIVATE KEY") ? "RSA PRIVATE KEY"
        : others.contains("EC PRIVATE KEY") ? "EC PRIVATE KEY" : null;
    if (legacy != null) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " holds a -----BEGIN " + legacy
          + "----- block (PKCS#1/SEC1), not PKCS#8; convert it with: openssl pkcs8 -topk8 -nocrypt -in "
          + file.getFileName() + " -out key.pk8.pem");
    }
    if (others.contains("ENCRYPTED PRIVATE KEY")) {
      throw new IllegalArgumentException("the Redis " + what + " " + file + " is encrypted; give an unencrypted"
          + " PKCS#8 key: openssl pkcs8 -topk8 -nocrypt -in " + file.getFileName() + " -out key.pk8.pem");
    }
    throw new IllegalArgumentException("the Redis " + what + " " + file + " is not PEM with a -----BEGIN " + type
        + "----- block" + (others.isEmpty() ? "" : " (it holds " + String.join(", ", others) + ")"));
  }

  /** Whether {@code key} signs what the certificate's public key verifies. */
  private static boolean belongsTo(PrivateKey key, X509Certificate certificate) {
    String algorithm = switch (key.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "EC" -> "SHA256withECDSA";
      case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
      default -> null;
    };
    if (algorithm == null) {
      return true; // cannot check: the handshake will tell
    }
    try {
      byte[] probe = "handoff".getBytes(StandardCharsets.US_ASCII);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(certificate.getPublicKey());
      verifier.update(probe);
      return verifier.verify(signature);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }

  private static KeyStore emptyStore() throws GeneralSecurityException, IOException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    return store;
  }
}
