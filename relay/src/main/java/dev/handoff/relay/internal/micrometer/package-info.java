/**
 * The Micrometer binding of the relay, loaded only when its builder was given a {@code MeterRegistry}:
 * Micrometer is an optional dependency, and nothing outside this package names its types in code that runs without
 * one. Not an API, may change in any release.
 */
package dev.handoff.relay.internal.micrometer;
