"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546, KIP-599): the quota configs kept in
the data directory (store.py), Kafka's rate measures (rate.py) and the managers that decide
what to throttle (manager.py)."""

from .manager import DEFAULT, ClientQuotaManager, ConnectionQuotas, MutationQuota, QuotaManagers
from .store import ClientQuotaFileError, ClientQuotaStore, QuotaRequestError

__all__ = ["ClientQuotaStore", "ClientQuotaFileError", "QuotaRequestError", "QuotaManagers", "ClientQuotaManager",
           "MutationQuota", "ConnectionQuotas", "DEFAULT"]
