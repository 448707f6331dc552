"""Listeners' security: endpoints and their protocols, TLS contexts, SASL mechanisms, SCRAM
credentials, principals."""
