"""Fakes of the hosted video providers' APIs (one module each), on a shared base (base.py)."""
