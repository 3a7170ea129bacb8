/** Implementation details of handoff's relay; not an API, may change in any release. */
package dev.handoff.relay.internal;
