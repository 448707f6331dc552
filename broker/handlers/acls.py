"""What the three ACL APIs (DescribeAcls, CreateAcls, DeleteAcls) answer on a broker without an
authorizer, as Kafka's does: SECURITY_DISABLED, "No Authorizer is configured.", for the request
(DescribeAcls) or for each creation and each filter.

This broker has no authorizer yet: ``authorizer.class.name`` is refused at start-up
(broker/config.py) rather than accepted and not enforced, so every ACL request gets this answer.
Answering (instead of not advertising the APIs) is what admin clients expect: Kafka's admin
tools and kafka-python-ng take a broker without the ACL APIs for an incompatible version.
"""

from __future__ import annotations

from client.protocol.api import ErrorCode

__all__ = ["NO_AUTHORIZER", "SECURITY_DISABLED"]

#: Kafka's message for an ACL request to a broker without an authorizer
NO_AUTHORIZER = "No Authorizer is configured."
SECURITY_DISABLED = int(ErrorCode.SECURITY_DISABLED)
