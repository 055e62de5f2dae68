"""One module per Kafka API; each exposes `handle(services, header, request)`.

A handler returns the response entity, a `SplicedResponse` (Fetch), or None
when the protocol says not to answer (Produce with acks=0).
"""
