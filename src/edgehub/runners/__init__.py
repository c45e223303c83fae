"""Transports: the only code that imports docker or paramiko (at the point of use)."""
