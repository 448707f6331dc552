"""Consumer groups in our client: the consumer protocol's bytes (``protocol``), the partition
assignors (``assignors``), the member's side of Kafka's classic group protocol (``coordinator``
and its commit half ``offsets``, which ``client.consumer.Consumer`` drives when given a
``group_id``), and the group operations of ``client.admin.Admin`` (``admin``)."""
