"""SASL mechanisms' shared parts: what both the client and the broker compute (SCRAM's keys)."""
