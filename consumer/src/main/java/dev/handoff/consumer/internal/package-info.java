/** Implementation of the consumer. Not an API: anything here may change without notice. */
package dev.handoff.consumer.internal;
