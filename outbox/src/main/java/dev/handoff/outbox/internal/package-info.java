/** Implementation details of handoff's outbox; not an API, may change in any release. */
package dev.handoff.outbox.internal;
