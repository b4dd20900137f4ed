"""The NATS side of the audit service, all with deadlines: the collector's durable consumer on the record subjects
(`consumer`: batches of records in stream order), the ledger subject (`ledger`: its head, optimistic appends one at a
time or as atomic batches, bounded reads and a follower), and the subscription to the services' spans that fills the
trace store (`trace_keeper`). What they share is `store`: NATS failures that a retry can outlast (timeouts,
reconnects, JetStream not ready after a restart) become StoreUnavailable; anything else is a bug or a
misconfiguration and propagates as it is.
"""
