"""Scale-out: turns as jobs on RabbitMQ, run by ``coach worker`` processes, PostgreSQL holding the truth
(docs/scale-out.md).

Modules: ``jobs`` (the broker message: ids only), ``broker`` (the RabbitMQ topology, publishing with
confirms, consuming with reconnect; aio-pika), ``worker`` (the consumer that runs turns with the
Supervisor), ``frontend`` (publish a turn and follow its job row), ``metrics`` (``/metrics``),
``hooks`` (what the supervisor needs to resume a redelivered turn), ``capacity`` (warm sessions per
node's memory).
"""
