"""Model state beyond the IR's pairs: KV caches of decoder exports (kv_cache.py)."""
