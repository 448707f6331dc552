"""Listeners' security: TLS contexts, SASL mechanisms, SCRAM credentials, principals.

- ``scram_credentials.py``: ``ScramCredentialStore``, the SCRAM credentials (KIP-554) kept in
  ``<log.dir>/scram-credentials.json``, which AlterUserScramCredentials changes,
  DescribeUserScramCredentials lists and the SCRAM mechanism reads; ``parse_add_scram`` reads
  ``serve --add-scram``'s values (``kafka-storage format --add-scram``'s syntax).
"""

from .scram_credentials import (
    CREDENTIALS_FILE,
    ScramCredentialFileError,
    ScramCredentialStore,
    ScramSeed,
    apply_seeds,
    parse_add_scram,
)

__all__ = ["CREDENTIALS_FILE", "ScramCredentialFileError", "ScramCredentialStore", "ScramSeed", "apply_seeds",
           "parse_add_scram"]
